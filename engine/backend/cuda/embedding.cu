// Token lookup, its scatter-add and the broadcast addition of learned positions, matching
// cpu/embedding.cpp bit for bit: the lookup and the addition are a copy and one fp32 addition
// per element; the two sums run in the CPU's order.
//
// The scatter-add is deterministic without atomics or sorting: one thread per (table row,
// column) scans the ids in row order and adds the dy rows that name its table row, in fp32,
// starting from the table's value or zero, exactly the CPU's loop restricted to one table row.
// Every thread of a block reads the same id at the same time (a broadcast), and a table row
// no id names costs its scan only. Speed follow-up: the scan is vocabulary x rows compares,
// fine for a character vocabulary; a large one wants the ids sorted once per batch (a stable
// sort keeps the order) and a segmented sum.
//
// Ids are checked where they are read. The CPU throws a DataError naming a bad one; a kernel
// cannot, so the lookup writes NaN for its row (the loss turns NaN and the step shows it) and
// the scatter-add finds no table row for it.
#include "engine/backend/cuda/device_numerics.cuh"
#include "engine/backend/cuda/explicit_rounding.cuh"
#include "engine/backend/cuda/kernels.h"

#include <math_constants.h>

#include <algorithm>

namespace mantissa::cuda {

namespace {

// The table row an id names, or -1 when it is not a whole number in [0, vocabulary).
__device__ __forceinline__ std::int64_t tokenOf(float id, std::int64_t vocabulary)
{
    const bool valid = id >= 0.0f && id < static_cast<float>(vocabulary) && id == floorf(id);
    return valid ? static_cast<std::int64_t>(id) : -1;
}

__global__ void embeddingForwardKernel(const float* ids, const void* table, DType tableType, void* y, DType yType,
                                       std::int64_t rows, std::int64_t vocabulary, std::int64_t width)
{
    const std::int64_t n = rows * width;
    for (std::int64_t i = firstIndex(); i < n; i += gridStride()) {
        const std::int64_t row = i / width, c = i % width;
        const std::int64_t token = tokenOf(ids[row], vocabulary);
        storeAs(y, yType, i, token >= 0 ? loadAs(table, tableType, token * width + c) : CUDART_NAN_F);
    }
}

// blockIdx.y picks the table row (looping past the grid's limit), x threads its columns.
__global__ void embeddingBackwardKernel(const float* ids, const void* dy, DType dyType, void* dtable, DType dtableType,
                                        std::int64_t rows, std::int64_t vocabulary, std::int64_t width, bool accumulate)
{
    const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (c >= width)
        return;
    for (std::int64_t v = blockIdx.y; v < vocabulary; v += gridDim.y) {
        float sum = accumulate ? loadAs(dtable, dtableType, v * width + c) : 0.0f;
        for (std::int64_t row = 0; row < rows; ++row)
            if (tokenOf(ids[row], vocabulary) == v)
                sum = exact::add(sum, loadAs(dy, dyType, row * width + c));
        storeAs(dtable, dtableType, v * width + c, sum);
    }
}

__global__ void addBroadcastKernel(const void* x, DType xType, const void* table, DType tableType, void* y, DType yType,
                                   std::int64_t n, std::int64_t period)
{
    for (std::int64_t i = firstIndex(); i < n; i += gridStride())
        storeAs(y, yType, i, exact::add(loadAs(x, xType, i), loadAs(table, tableType, i % period)));
}

__global__ void addBroadcastBackwardKernel(const void* dy, DType dyType, void* dtable, DType dtableType, std::int64_t n,
                                           std::int64_t period, std::int64_t tableSize)
{
    const std::int64_t samples = n / period;
    for (std::int64_t i = firstIndex(); i < tableSize; i += gridStride()) {
        double sum = 0;
        if (i < period)
            for (std::int64_t s = 0; s < samples; ++s)
                sum += loadAs(dy, dyType, s * period + i);
        storeAs(dtable, dtableType, i, static_cast<float>(sum));
    }
}

} // namespace

void launchEmbeddingForward(const float* ids, const void* table, DType tableType, void* y, DType yType,
                            std::int64_t rows, std::int64_t vocabulary, std::int64_t width, cudaStream_t stream)
{
    if (rows <= 0 || width <= 0)
        return;
    embeddingForwardKernel<<<blocksFor(rows * width), kThreadsPerBlock, 0, stream>>>(ids, table, tableType, y, yType,
                                                                                     rows, vocabulary, width);
}

void launchEmbeddingBackward(const float* ids, const void* dy, DType dyType, void* dtable, DType dtableType,
                             std::int64_t rows, std::int64_t vocabulary, std::int64_t width, bool accumulate,
                             cudaStream_t stream)
{
    if (vocabulary <= 0 || width <= 0)
        return;
    const unsigned threads = static_cast<unsigned>(std::min<std::int64_t>(width, kThreadsPerBlock));
    const dim3 grid(static_cast<unsigned>((width + threads - 1) / threads),
                    static_cast<unsigned>(std::min<std::int64_t>(vocabulary, 65535)));
    embeddingBackwardKernel<<<grid, threads, 0, stream>>>(ids, dy, dyType, dtable, dtableType, rows, vocabulary, width,
                                                          accumulate);
}

void launchAddBroadcast(const void* x, DType xType, const void* table, DType tableType, void* y, DType yType,
                        std::int64_t n, std::int64_t period, cudaStream_t stream)
{
    if (n <= 0)
        return;
    addBroadcastKernel<<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(x, xType, table, tableType, y, yType, n, period);
}

void launchAddBroadcastBackward(const void* dy, DType dyType, void* dtable, DType dtableType, std::int64_t n,
                                std::int64_t period, std::int64_t tableSize, cudaStream_t stream)
{
    if (tableSize <= 0)
        return;
    addBroadcastBackwardKernel<<<blocksFor(tableSize), kThreadsPerBlock, 0, stream>>>(dy, dyType, dtable, dtableType, n,
                                                                                      period, tableSize);
}

} // namespace mantissa::cuda
