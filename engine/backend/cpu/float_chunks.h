#pragma once
// Element-wise CPU kernels over tensors of any storage type, one chunk at a time: a chunk of a
// 16-bit tensor is widened into a small fp32 buffer, the kernel runs on it, and its results are
// rounded back into the tensor. The values are the ones FloatInput/FloatOutput give (the same
// fp32 arithmetic, the same one rounding), without their whole-tensor fp32 copies: on a bf16
// resnet-small those copies' memory traffic took a fifth of the step, more than the arithmetic.
// fp32 tensors are read and written in place.
#include "engine/tensor/tensor.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

namespace mantissa::cpu {

// 2048 floats (8 KiB) per operand keep a chunk's fp32 copies in L1 beside the kernel's work.
inline constexpr std::size_t kFloatChunk = 2048;

// Elements [begin, begin + count) of `t` as fp32: t's own memory when it is fp32, otherwise
// widened exactly into `scratch`, which has room for `count` floats.
const float* floatsOf(const Tensor& t, std::size_t begin, std::size_t count, float* scratch);

// Where a kernel writes elements [begin, ...) of `t` in fp32: t's own memory when it is fp32,
// otherwise `scratch`; storeFloats then rounds the scratch into `t`.
float* floatSlot(Tensor& t, std::size_t begin, float* scratch);
void storeFloats(Tensor& t, std::size_t begin, std::size_t count, const float* slot);

// kernel(in, out, count) over n elements, chunk by chunk (in parallel when n is large): in[k]
// holds the fp32 values of inputs[k]'s chunk and out[k] takes outputs[k]'s. With
// `loadOutputs`, out[k] starts with outputs[k]'s current values (for accumulation). An output
// may be one of the inputs: a chunk is read whole before any of it is written.
template <std::size_t Inputs, std::size_t Outputs, typename Kernel>
void forFloatChunks(std::size_t n, const std::array<const Tensor*, Inputs>& inputs,
                    const std::array<Tensor*, Outputs>& outputs, Kernel&& kernel, bool loadOutputs = false)
{
    const auto chunks = static_cast<std::int64_t>((n + kFloatChunk - 1) / kFloatChunk);
#pragma omp parallel for schedule(static) if (n > 65536)
    for (std::int64_t c = 0; c < chunks; ++c) {
        alignas(64) float inScratch[Inputs > 0 ? Inputs : 1][kFloatChunk];
        alignas(64) float outScratch[Outputs > 0 ? Outputs : 1][kFloatChunk];
        const std::size_t begin = static_cast<std::size_t>(c) * kFloatChunk;
        const std::size_t count = std::min(kFloatChunk, n - begin);
        std::array<const float*, Inputs> in{};
        std::array<float*, Outputs> out{};
        for (std::size_t k = 0; k < Inputs; ++k)
            in[k] = floatsOf(*inputs[k], begin, count, inScratch[k]);
        for (std::size_t k = 0; k < Outputs; ++k) {
            out[k] = floatSlot(*outputs[k], begin, outScratch[k]);
            if (loadOutputs && out[k] == outScratch[k])
                floatsOf(*outputs[k], begin, count, outScratch[k]);
        }
        kernel(in, out, count);
        for (std::size_t k = 0; k < Outputs; ++k)
            storeFloats(*outputs[k], begin, count, out[k]);
    }
}

} // namespace mantissa::cpu
