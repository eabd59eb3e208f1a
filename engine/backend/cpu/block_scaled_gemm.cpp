// The block-scaled GEMM (Backend::gemmBlockScaled; docs/formats.md, "The block-scaled FP8
// GEMM"): the FP8 elements of each 128-wide K-chunk are multiplied natively in bf16 where the
// plan says so (widened exactly to fp32 otherwise, the oracle), into fp32 partial sums, one
// [m, n] matrix per chunk; an fp32 pass then scales each chunk's partial sums by its decode
// scales and adds the chunks up in order. The whole chunks run as one batched oneDNN matmul
// (K-contiguous operands packed chunk by chunk first, K-major ones read where they lie), the
// short last chunk as one more.
#include "engine/backend/cpu/block_scaled_bf16_kernel.h"
#include "engine/backend/cpu/block_scaled_gemm_sum.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_view.h"
#include "engine/backend/cpu/onednn_matmul.h"
#include "engine/util/check.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace mantissa {

namespace {

cpu::ChunkScales chunkScales(const BlockScales& s)
{
    if (!s.present())
        return {};
    MANTISSA_ASSERT(s.scales.dtype() == DType::F32 && s.group >= 1);
    return {s.scales.f32(), s.group, s.chunkStride, s.indexStride};
}

// At least `size` elements in `buffer`, which only grows: a vector's resize to a larger size
// zero-fills the new part, megabytes per call when the layers' GEMMs take turns.
template <typename T>
T* atLeast(std::vector<T>& buffer, std::size_t size)
{
    if (buffer.size() < size)
        buffer.resize(size);
    return buffer.data();
}

// Copies the K-contiguous operand X [rows, k] (row-major) chunk by chunk: its `full` whole
// chunks to dst as [full, rows, chunk], then the short last one (k - full * chunk wide, if
// any) after them as [rows, tail]. Bits are copied as they are (bf16 or fp32).
template <typename Bits>
void packChunksOf(const Bits* src, std::int64_t rows, std::int64_t k, std::int64_t chunk, Bits* dst)
{
    const std::int64_t full = k / chunk, tail = k - full * chunk, pieces = full + (tail > 0 ? 1 : 0);
#pragma omp parallel for schedule(static) if (rows * k >= (std::int64_t{1} << 15))
    for (std::int64_t item = 0; item < pieces * rows; ++item) {
        const std::int64_t c = item / rows, r = item % rows, width = c < full ? chunk : tail;
        std::copy_n(src + r * k + c * chunk, width, dst + c * rows * chunk + r * width);
    }
}

void packChunks(const void* src, std::int64_t rows, std::int64_t k, std::int64_t chunk, std::size_t element,
                unsigned char* dst)
{
    if (element == 2)
        packChunksOf(static_cast<const std::uint16_t*>(src), rows, k, chunk, reinterpret_cast<std::uint16_t*>(dst));
    else
        packChunksOf(static_cast<const std::uint32_t*>(src), rows, k, chunk, reinterpret_cast<std::uint32_t*>(dst));
}

// Where one operand's K-chunks lie for the matmuls: the whole chunks as a batch `stride`
// elements apart, and the short last chunk. An operand whose K runs down its rows (A read
// transposed, B not) has each chunk as a dense block of its own buffer, read where it lies; a
// K-contiguous one is packed (packChunks), since oneDNN 2.6 sends strided views of it to its
// slower gemm:jit kernels instead of the brgemm ones.
struct Chunked {
    const unsigned char* full = nullptr;
    const unsigned char* tail = nullptr;
    Transpose transpose = Transpose::No;
    std::int64_t stride = 0;
};

// `rows`: m for A, n for B; `kMajor`: the buffer is [k, rows].
Chunked chunked(const void* data, bool kMajor, std::int64_t rows, std::int64_t k, std::int64_t chunk,
                std::size_t element, bool isB, std::vector<unsigned char>& packed)
{
    const auto* bytes = static_cast<const unsigned char*>(data);
    const std::int64_t full = k / chunk;
    // op(A) is [m, k]: Transpose::Yes reads a [k, m] buffer; op(B) is [k, n]: Transpose::No
    // reads a [k, n] buffer. So the K-major layout is A transposed or B not.
    const Transpose kMajorTranspose = isB ? Transpose::No : Transpose::Yes;
    const Transpose rowsTranspose = isB ? Transpose::Yes : Transpose::No;
    if (kMajor)
        return {bytes, bytes + static_cast<std::size_t>(full * chunk * rows) * element, kMajorTranspose, chunk * rows};
    unsigned char* to = atLeast(packed, static_cast<std::size_t>(rows * k) * element);
    packChunks(data, rows, k, chunk, element, to);
    return {to, to + static_cast<std::size_t>(full * chunk * rows) * element, rowsTranspose, chunk * rows};
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
    // An fp32 c takes the sums where it lies; a 16-bit one takes each row rounded as soon as it
    // is summed (sumScaledChunks), the bits FloatOutput's commit would give, without an fp32
    // copy of the whole output.
    const bool wide = c.dtype() == DType::F32;
    if (m == 0 || n == 0)
        return;
    const std::int64_t chunks = (k + chunk - 1) / chunk;
    const cpu::ChunkScales scalesA = chunks > 0 ? chunkScales(scales.a) : cpu::ChunkScales{};
    const cpu::ChunkScales scalesB =
        chunks > 0 ? chunkScales(scales.b) : cpu::ChunkScales{}; // K = 0: no scales to read
    const float* biasData = fbias ? fbias->data() : nullptr;
    const cpu::ChunkSumOutput out{c.data(), c.dtype()};
    if (native && m_plan.ownBlockScaledKernel && chunk % 2 == 0 && k > 0) {
        cpu::blockScaledBf16Gemm(m, n, k, chunk, {static_cast<const std::uint16_t*>(fa.data()), ta == Transpose::Yes},
                                 {static_cast<const std::uint16_t*>(fb.data()), tb == Transpose::No}, scalesA, scalesB,
                                 biasData, out, m_blockScaledScratch);
        m_ownBlockScaledKernelUsed = true;
        return;
    }
    if (chunks <= 1) {
        // One chunk (or K = 0, every sum 0): the product straight into an fp32 output's buffer,
        // scaled there in place.
        float* sums = wide ? c.f32() : atLeast(m_blockPartials, static_cast<std::size_t>(m * n));
        if (chunks == 0)
            std::fill(sums, sums + m * n, 0.0f);
        else
            m_matmul->run({ta, tb, m, n, k, native, false, 1.0f, 0.0f}, fa.data(), fb.data(), nullptr, sums);
        cpu::sumScaledChunks(sums, 1, m, n, scalesA, scalesB, biasData, out);
        return;
    }
    // The whole chunks as one batched matmul into [full, m, n] partial sums, the short last
    // chunk (K not a multiple of the chunk) as one more product after them.
    const std::size_t element = native ? 2 : 4;
    const std::int64_t full = k / chunk, tail = k - full * chunk;
    float* partials = atLeast(m_blockPartials, static_cast<std::size_t>(chunks * m * n));
    const Chunked ca = chunked(fa.data(), ta == Transpose::Yes, m, k, chunk, element, false, m_packedA);
    const Chunked cb = chunked(fb.data(), tb == Transpose::No, n, k, chunk, element, true, m_packedB);
    cpu::MatmulShape shape{ca.transpose, cb.transpose, m, n, chunk, native, false, 1.0f, 0.0f};
    if (full > 1) {
        shape.batch = full;
        shape.strideA = ca.stride;
        shape.strideB = cb.stride;
        shape.strideC = m * n;
    }
    m_matmul->run(shape, ca.full, cb.full, nullptr, partials);
    if (tail > 0)
        m_matmul->run({ca.transpose, cb.transpose, m, n, tail, native, false, 1.0f, 0.0f}, ca.tail, cb.tail, nullptr,
                      partials + full * m * n);
    cpu::sumScaledChunks(partials, chunks, m, n, scalesA, scalesB, biasData, out);
}

} // namespace mantissa
