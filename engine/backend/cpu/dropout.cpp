// Inverted dropout: y = x * mask with mask in {0, 1/(1-p)}, so evaluation needs no rescaling.
// The mask comes from backend/dropout_hash.h, shared with the CUDA kernel.
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_chunks.h"
#include "engine/backend/cpu/row_chunks.h"
#include "engine/backend/dropout_hash.h"
#include "engine/util/check.h"

namespace mantissa {

void CpuBackend::dropoutForward(const Tensor& x, Tensor& y, Tensor& mask, float p, std::uint64_t seed,
                                std::uint64_t counter)
{
    MANTISSA_ASSERT(p >= 0.0f && p < 1.0f);
    MANTISSA_ASSERT(x.numel() == y.numel() && mask.numel() == x.numel() && mask.dtype() == DType::F32);
    MANTISSA_ASSERT(x.numel() <= (std::int64_t{1} << 32)); // indices are hashed as 32 bits
    const dropout::Key key = dropout::maskKey(seed, counter);
    const float keep = 1.0f / (1.0f - p);
    // Rows of one value: blocks of 2048 (row_chunks.h) that know their first index, which the
    // mask's hash takes. The mask is fp32, written in place.
    cpu::forRowBlocks<1, 2>(x.numel(), 1, cpu::rowsPerBlock(1), {&x}, {&y, &mask}, true,
                            [&](auto in, auto out, std::int64_t first, std::int64_t count) {
                                for (std::int64_t i = 0; i < count; ++i) {
                                    const auto index = static_cast<std::uint32_t>(first + i);
                                    out[1][i] = dropout::uniformAt(key, index) < p ? 0.0f : keep;
                                    out[0][i] = in[0][i] * out[1][i];
                                }
                            });
}

void CpuBackend::dropoutBackward(const Tensor& dy, const Tensor& mask, Tensor& dx)
{
    MANTISSA_ASSERT(dy.numel() == dx.numel() && mask.numel() == dy.numel() && mask.dtype() == DType::F32);
    cpu::forFloatChunks<2, 1>(static_cast<std::size_t>(dy.numel()), {&dy, &mask}, {&dx},
                              [](auto in, auto out, std::size_t count) {
                                  for (std::size_t i = 0; i < count; ++i)
                                      out[0][i] = in[0][i] * in[1][i];
                              });
}

} // namespace mantissa
