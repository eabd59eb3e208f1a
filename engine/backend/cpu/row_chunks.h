#pragma once
// Row-wise CPU kernels (normalisation, softmax, the loss) over tensors of any storage type, a
// block of whole rows at a time: the block of each 16-bit operand is widened into a per-thread
// fp32 buffer, the kernel runs on it, and its results are rounded back into the tensor. Same
// values as FloatInput/FloatOutput (the same fp32 arithmetic on each row, the same one
// rounding) without their whole-tensor fp32 copies, whose memory traffic cost more than the
// arithmetic of these ops (float_chunks.h does the same for element-wise kernels).
#include "engine/backend/cpu/float_chunks.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace mantissa::cpu {

// How many rows of `width` values make a block of about `floats` values (at least one row):
// kFloatChunk keeps a block's fp32 copies in L1; a kernel with a cost per call (a oneDNN
// primitive) takes bigger blocks, still in L2.
inline std::int64_t rowsPerBlock(std::int64_t width, std::size_t floats = kFloatChunk)
{
    return std::max<std::int64_t>(1, static_cast<std::int64_t>(floats) / std::max<std::int64_t>(1, width));
}

// kernel(in, out, firstRow, rowCount) over `rows` rows of `width` values, `blockRows` rows at
// a time: in[k] holds the fp32 values of inputs[k]'s rows [firstRow, firstRow + rowCount) and
// out[k] takes outputs[k]'s (uninitialised when outputs[k] is 16-bit). Blocks run in parallel
// when `parallel` (the kernel must then touch only its own rows), otherwise in order on the
// calling thread, for reductions whose summation order must not depend on the thread count.
template <std::size_t Inputs, std::size_t Outputs, typename Kernel>
void forRowBlocks(std::int64_t rows, std::int64_t width, std::int64_t blockRows,
                  const std::array<const Tensor*, Inputs>& inputs, const std::array<Tensor*, Outputs>& outputs,
                  bool parallel, Kernel&& kernel)
{
    const std::int64_t blocks = (rows + blockRows - 1) / blockRows;
    const auto blockFloats = static_cast<std::size_t>(blockRows * width);
#pragma omp parallel if (parallel && blocks > 1 && rows * width > 65536)
    {
        // Per thread, for the whole call, left uninitialised (only 16-bit operands touch it).
        const auto scratch = std::make_unique_for_overwrite<float[]>((Inputs + Outputs) * blockFloats);
#pragma omp for schedule(static)
        for (std::int64_t b = 0; b < blocks; ++b) {
            const std::int64_t first = b * blockRows;
            const std::int64_t count = std::min(blockRows, rows - first);
            const auto begin = static_cast<std::size_t>(first * width);
            const auto n = static_cast<std::size_t>(count * width);
            std::array<const float*, Inputs> in{};
            std::array<float*, Outputs> out{};
            for (std::size_t k = 0; k < Inputs; ++k)
                in[k] = floatsOf(*inputs[k], begin, n, scratch.get() + k * blockFloats);
            for (std::size_t k = 0; k < Outputs; ++k)
                out[k] = floatSlot(*outputs[k], begin, scratch.get() + (Inputs + k) * blockFloats);
            kernel(in, out, first, count);
            for (std::size_t k = 0; k < Outputs; ++k)
                storeFloats(*outputs[k], begin, n, out[k]);
        }
    }
}

} // namespace mantissa::cpu
