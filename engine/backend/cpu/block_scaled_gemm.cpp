// The block-scaled GEMM (Backend::gemmBlockScaled; docs/formats.md, "The block-scaled FP8
// GEMM"): the FP8 elements of each 128-wide K-chunk are multiplied natively in bf16 where the
// plan says so (widened exactly to fp32 otherwise, the oracle), into fp32 partial sums, one
// [m, n] matrix per chunk; an fp32 pass then scales each chunk's partial sums by its decode
// scales and adds the chunks up in order. The full chunks go to oneDNN as one batched matmul
// over strided views of the operands (no copies); a short last chunk as one more.
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_view.h"
#include "engine/backend/cpu/onednn_matmul.h"
#include "engine/backend/cpu/output_scale.h"
#include "engine/util/check.h"

#include <algorithm>
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
    const std::int64_t full = k / chunk, rest = k % chunk, chunks = full + (rest > 0 ? 1 : 0);
    m_blockPartials.resize(static_cast<std::size_t>(std::max<std::int64_t>(chunks, 1) * m * n));
    float* partials = m_blockPartials.data();
    if (chunks == 0) // K = 0: every sum is 0
        std::fill(partials, partials + m * n, 0.0f);
    // Row pitches of the buffers as they lie, and where K-chunk k0 starts in each (in elements).
    const std::int64_t lda = ta == Transpose::No ? k : m, ldb = tb == Transpose::No ? n : k;
    const auto startA = [&](std::int64_t k0) { return ta == Transpose::No ? k0 : k0 * lda; };
    const auto startB = [&](std::int64_t k0) { return tb == Transpose::No ? k0 * ldb : k0; };
    const std::size_t element = native ? 2 : 4;
    const auto* baseA = static_cast<const unsigned char*>(fa.data());
    const auto* baseB = static_cast<const unsigned char*>(fb.data());
    if (full > 0) {
        cpu::MatmulShape shape{ta, tb, m, n, chunk, native, false, 1.0f, 0.0f};
        shape.batch = full;
        shape.strideA = startA(chunk);
        shape.strideB = startB(chunk);
        shape.strideC = m * n;
        shape.lda = lda;
        shape.ldb = ldb;
        m_matmul->run(shape, baseA, baseB, nullptr, partials);
    }
    if (rest > 0) {
        cpu::MatmulShape shape{ta, tb, m, n, rest, native, false, 1.0f, 0.0f};
        shape.lda = lda;
        shape.ldb = ldb;
        const std::int64_t k0 = full * chunk;
        m_matmul->run(shape, baseA + static_cast<std::size_t>(startA(k0)) * element,
                      baseB + static_cast<std::size_t>(startB(k0)) * element, nullptr, partials + full * m * n);
    }
    const bool scaled = chunks > 0; // K = 0 has no chunks and no scales to read
    cpu::sumScaledChunks(
        partials, std::max<std::int64_t>(chunks, 1), m, n, scaled ? chunkScales(scales.a) : cpu::ChunkScales{},
        scaled ? chunkScales(scales.b) : cpu::ChunkScales{}, fbias ? fbias->data() : nullptr, fc.data());
    fc.commit();
}

} // namespace mantissa
