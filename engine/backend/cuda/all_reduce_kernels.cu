// The divisions and counts around the on-device all-reduce (all_reduce_kernels.h). Each block
// folds its counts with block_reduce.cuh and adds them with one atomic: the counts are
// integers and the maximum is order-free, so the atomics keep them exact.
#include "engine/backend/cuda/all_reduce_kernels.h"
#include "engine/backend/cuda/block_reduce.cuh"
#include "engine/backend/cuda/device_numerics.cuh"

namespace mantissa::cuda {

namespace {

__global__ void divideRoundedKernel(void* values, DType type, std::int64_t n, float divisor,
                                    unsigned long long* flushed)
{
    __shared__ unsigned long long slots[kReduceSlots];
    unsigned long long lost = 0;
    for (std::int64_t i = firstIndex(); i < n; i += gridStride()) {
        const float quotient = loadAs(values, type, i) / divisor;
        storeAs(values, type, i, quotient);
        // NaN != 0 both before and after: only finite nonzero quotients can be lost.
        lost += (quotient != 0.0f && roundedTo(type, quotient) == 0.0f) ? 1 : 0;
    }
    if (!flushed)
        return;
    const unsigned long long block = blockReduce(
        lost, [](unsigned long long a, unsigned long long b) { return a + b; }, slots);
    if (threadIdx.x == 0 && block)
        atomicAdd(flushed, block);
}

__global__ void scanFiniteKernel(const void* values, DType type, std::int64_t n, unsigned long long* nonFinite,
                                 unsigned int* amaxBits)
{
    __shared__ unsigned long long countSlots[kReduceSlots];
    __shared__ unsigned int maxSlots[kReduceSlots];
    unsigned long long count = 0;
    unsigned int amax = 0;
    for (std::int64_t i = firstIndex(); i < n; i += gridStride()) {
        const float v = loadAs(values, type, i);
        count += isfinite(v) ? 0 : 1;
        if (!isnan(v))
            amax = max(amax, __float_as_uint(fabsf(v)));
    }
    const unsigned long long blockCount = blockReduce(
        count, [](unsigned long long a, unsigned long long b) { return a + b; }, countSlots);
    const unsigned int blockMax = blockReduce(
        amax, [](unsigned int a, unsigned int b) { return max(a, b); }, maxSlots);
    if (threadIdx.x != 0)
        return;
    if (blockCount)
        atomicAdd(nonFinite, blockCount);
    if (amaxBits && blockMax)
        atomicMax(amaxBits, blockMax);
}

} // namespace

void launchDivideRounded(void* values, DType type, std::int64_t n, float divisor, unsigned long long* flushed,
                         cudaStream_t stream)
{
    if (n > 0)
        divideRoundedKernel<<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(values, type, n, divisor, flushed);
}

void launchScanFinite(const void* values, DType type, std::int64_t n, unsigned long long* nonFinite,
                      unsigned int* amaxBits, cudaStream_t stream)
{
    if (n > 0)
        scanFiniteKernel<<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(values, type, n, nonFinite, amaxBits);
}

} // namespace mantissa::cuda
