#include "engine/backend/cpu/bf16_bits.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_chunks.h"
#include "engine/util/check.h"

#include <algorithm>

namespace mantissa {

namespace {

// out = a + b on bf16 tensors (a residual connection's sum and its gradient's): each chunk's
// fp32 sums formed from the bf16 bits as they lie, then rounded into out as forFloatChunks
// rounds them, without widening the inputs into buffers first. `out` may be a or b: a chunk is
// summed whole before any of it is written.
void addBf16(const Tensor& a, const Tensor& b, Tensor& out)
{
    const auto n = static_cast<std::size_t>(out.numel());
    const auto* pa = reinterpret_cast<const cpu::Bf16Bits*>(a.u16());
    const auto* pb = reinterpret_cast<const cpu::Bf16Bits*>(b.u16());
    const auto chunks = static_cast<std::int64_t>((n + cpu::kFloatChunk - 1) / cpu::kFloatChunk);
#pragma omp parallel for schedule(static) if (n > 65536)
    for (std::int64_t c = 0; c < chunks; ++c) {
        alignas(64) float sum[cpu::kFloatChunk];
        const std::size_t begin = static_cast<std::size_t>(c) * cpu::kFloatChunk;
        const std::size_t count = std::min(cpu::kFloatChunk, n - begin);
        for (std::size_t i = 0; i < count; ++i)
            sum[i] = cpu::widened(pa[begin + i]) + cpu::widened(pb[begin + i]);
        cpu::storeFloats(out, begin, count, sum);
    }
}

} // namespace

void CpuBackend::add(const Tensor& a, const Tensor& b, Tensor& out)
{
    MANTISSA_ASSERT(a.numel() == b.numel() && a.numel() == out.numel());
    if (a.dtype() == DType::BF16 && b.dtype() == DType::BF16 && out.dtype() == DType::BF16) {
        addBf16(a, b, out);
        return;
    }
    cpu::forFloatChunks<2, 1>(static_cast<std::size_t>(out.numel()), {&a, &b}, {&out},
                              [](auto in, auto sum, std::size_t n) {
                                  for (std::size_t i = 0; i < n; ++i)
                                      sum[0][i] = in[0][i] + in[1][i];
                              });
}

} // namespace mantissa
