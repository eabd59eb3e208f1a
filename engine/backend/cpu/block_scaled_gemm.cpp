// The block-scaled GEMM (Backend::gemmBlockScaled; docs/formats.md, "The block-scaled FP8
// GEMM"): the FP8 elements of each 128-wide K-chunk are multiplied natively in bf16 where the
// plan says so (widened exactly to fp32 otherwise, the oracle), into fp32 partial sums, one
// [m, n] matrix per chunk; an fp32 pass then scales each chunk's partial sums by its decode
// scales and adds the chunks up in order. The operands are packed chunk by chunk (the short
// last chunk padded with zeros) and the chunks run as one batched oneDNN matmul.
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_view.h"
#include "engine/backend/cpu/onednn_matmul.h"
#include "engine/backend/cpu/output_scale.h"
#include "engine/util/check.h"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace mantissa {

namespace {

cpu::ChunkScales chunkScales(const BlockScales& s)
{
    if (!s.present())
        return {};
    MANTISSA_ASSERT(s.scales.dtype() == DType::F32 && s.group >= 1);
    return {s.scales.f32(), s.group, s.chunkStride, s.indexStride};
}

// dst[c, r, kk] = X[r, c * chunk + kk], 0 past K, for X [rows, k] (src row-major [rows, k], or
// [k, rows] when kMajor) of `element`-byte values (bf16 or fp32 bits, copied as they are).
template <typename Bits>
void packChunksOf(const Bits* src, bool kMajor, std::int64_t rows, std::int64_t k, std::int64_t chunk, Bits* dst)
{
    const std::int64_t chunks = (k + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) if (rows * k >= (std::int64_t{1} << 15))
    for (std::int64_t item = 0; item < chunks * rows; ++item) {
        const std::int64_t c = item / rows, r = item % rows, k0 = c * chunk, width = std::min(chunk, k - k0);
        Bits* to = dst + item * chunk;
        if (kMajor)
            for (std::int64_t kk = 0; kk < width; ++kk)
                to[kk] = src[(k0 + kk) * rows + r];
        else
            std::copy_n(src + r * k + k0, width, to);
        std::fill(to + width, to + chunk, Bits{0});
    }
}

void packChunks(const void* src, bool kMajor, std::int64_t rows, std::int64_t k, std::int64_t chunk,
                std::size_t element, unsigned char* dst)
{
    if (element == 2)
        packChunksOf(static_cast<const std::uint16_t*>(src), kMajor, rows, k, chunk,
                     reinterpret_cast<std::uint16_t*>(dst));
    else
        packChunksOf(static_cast<const std::uint32_t*>(src), kMajor, rows, k, chunk,
                     reinterpret_cast<std::uint32_t*>(dst));
}

} // namespace

void CpuBackend::gemmBlockScaled(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k,
                                 const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
                                 const OperandBlockScales& scales)
{
    MANTISSA_ASSERT(a.numel() >= m * k && b.numel() >= k * n && c.numel() >= m * n);
    MANTISSA_ASSERT(!bias || bias->numel() == n);
    MANTISSA_ASSERT(cpu::sameOrWidened(a, b));
    const std::int64_t chunk = scales.chunk();
    MANTISSA_ASSERT(chunk > 0 && (!scales.a.present() || !scales.b.present() || scales.a.chunk == scales.b.chunk));
    const bool native = a.dtype() == DType::BF16 && b.dtype() == DType::BF16 && m_plan.nativeBf16;
    const cpu::KernelInput fa(a, native);
    const cpu::KernelInput fb(b, native);
    std::optional<cpu::FloatInput> fbias;
    if (bias)
        fbias.emplace(*bias);
    cpu::FloatOutput fc(c);
    if (m == 0 || n == 0) {
        fc.commit();
        return;
    }
    const std::int64_t chunks = (k + chunk - 1) / chunk;
    m_blockPartials.resize(static_cast<std::size_t>(std::max<std::int64_t>(chunks, 1) * m * n));
    float* partials = m_blockPartials.data();
    const std::size_t element = native ? 2 : 4;
    if (chunks == 0) // K = 0: every sum is 0
        std::fill(partials, partials + m * n, 0.0f);
    else if (chunks == 1) // one chunk: the operands as they lie
        m_matmul->run({ta, tb, m, n, k, native, false, 1.0f, 0.0f}, fa.data(), fb.data(), nullptr, partials);
    else {
        // Both operands packed chunk by chunk, [chunks, rows, chunk] with the short last chunk
        // padded with zeros (which add nothing to its sums), for one batched matmul: oneDNN
        // 2.6's brgemm kernels take dense batches, while strided views of the operands go to
        // its slower gemm:jit kernels.
        m_packedA.resize(static_cast<std::size_t>(chunks * m * chunk) * element);
        m_packedB.resize(static_cast<std::size_t>(chunks * n * chunk) * element);
        packChunks(fa.data(), ta == Transpose::Yes, m, k, chunk, element, m_packedA.data());
        packChunks(fb.data(), tb == Transpose::No, n, k, chunk, element, m_packedB.data());
        cpu::MatmulShape shape{Transpose::No, Transpose::Yes, m, n, chunk, native, false, 1.0f, 0.0f};
        shape.batch = chunks;
        shape.strideA = m * chunk;
        shape.strideB = n * chunk;
        shape.strideC = m * n;
        m_matmul->run(shape, m_packedA.data(), m_packedB.data(), nullptr, partials);
    }
    const bool scaled = chunks > 0; // K = 0 has no chunks and no scales to read
    cpu::sumScaledChunks(
        partials, std::max<std::int64_t>(chunks, 1), m, n, scaled ? chunkScales(scales.a) : cpu::ChunkScales{},
        scaled ? chunkScales(scales.b) : cpu::ChunkScales{}, fbias ? fbias->data() : nullptr, fc.data());
    fc.commit();
}

} // namespace mantissa
