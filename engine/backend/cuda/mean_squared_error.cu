// Mean squared error, matching cpu/mean_squared_error.cpp: predictions widened to fp32, the
// difference taken in fp32 and squared and summed in double; gradient difference * gradScale
// with gradScale = 2 lossScale / (N K) formed once in fp32, rounded to dpredictions' dtype. The
// only departure: the partial sums reach *lossSum through double atomics in an order that
// varies by run (their values do not).
#include "engine/backend/cuda/block_reduce.cuh"
#include "engine/backend/cuda/device_numerics.cuh"
#include "engine/backend/cuda/explicit_rounding.cuh"
#include "engine/backend/cuda/kernels.h"
#include "engine/backend/cuda/scalar_args.cuh"

#include <algorithm>

namespace mantissa::cuda {

namespace {

__global__ void meanSquaredErrorKernel(const void* predictions, DType predictionsType, const float* targets,
                                       std::int64_t count, ScalarArg lossScale, void* dpredictions,
                                       DType dpredictionsType, double* lossSum)
{
    __shared__ double slots[kReduceSlots];
    const float gradScale = exact::div(exact::mul(2.0f, valueOf(lossScale)), static_cast<float>(count));
    double sum = 0;
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        const float difference = exact::sub(loadAs(predictions, predictionsType, i), targets[i]);
        sum += exact::mul(static_cast<double>(difference), static_cast<double>(difference));
        if (dpredictions)
            storeAs(dpredictions, dpredictionsType, i, exact::mul(difference, gradScale));
    }
    sum = blockReduce(
        sum, [](double a, double b) { return a + b; }, slots);
    if (threadIdx.x == 0)
        atomicAdd(lossSum, sum);
}

} // namespace

void launchMeanSquaredError(const void* predictions, DType predictionsType, const float* targets, std::int64_t count,
                            ScalarArg lossScale, void* dpredictions, DType dpredictionsType, double* lossSum,
                            unsigned long long* correct, cudaStream_t stream)
{
    cudaMemsetAsync(lossSum, 0, sizeof(double), stream);
    cudaMemsetAsync(correct, 0, sizeof(unsigned long long), stream);
    if (count <= 0)
        return;
    constexpr unsigned threads = 256;
    const auto blocks = static_cast<unsigned>(std::clamp<std::int64_t>((count + threads - 1) / threads, 1, 1024));
    meanSquaredErrorKernel<<<blocks, threads, 0, stream>>>(predictions, predictionsType, targets, count, lossScale,
                                                           dpredictions, dpredictionsType, lossSum);
}

} // namespace mantissa::cuda
