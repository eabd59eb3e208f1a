// Fused softmax and cross-entropy, one block per row (grid-striding over rows), matching
// cpu/softmax_cross_entropy.cpp: logits widened to fp32; the row maximum and its first index
// (a strict > scan from the left, so the first of equal maxima wins and a NaN never does
// unless it sits at index 0); exp() of the fp32 difference evaluated and summed in double;
// gradient (float)(p - onehot) * (lossScale / batch) rounded to dlogits' dtype. The only
// departures: the per-row exp sums are added in a fixed tree rather than left to right (both
// in double), CUDA's double exp/log may differ from glibc's by an ulp, and the per-row losses
// reach *lossSum through double atomics, so their order (not their values) varies by run.
// The loss scale is a ScalarArg: the host's value, or state[LossScale] read on the device
// for the step on the device (kernels.h); either way lossScale / batch is one fp32 division.
#include "engine/backend/cuda/block_reduce.cuh"
#include "engine/backend/cuda/device_numerics.cuh"
#include "engine/backend/cuda/explicit_rounding.cuh"
#include "engine/backend/cuda/kernels.h"
#include "engine/backend/cuda/scalar_args.cuh"

#include <math_constants.h>

#include <algorithm>

namespace mantissa::cuda {

namespace {

struct ArgMax {
    float value;
    std::int64_t index;
};

__device__ __forceinline__ ArgMax shuffleXor(ArgMax a, int offset)
{
    return {__shfl_xor_sync(0xffffffffu, a.value, offset), __shfl_xor_sync(0xffffffffu, a.index, offset)};
}

// The CPU's left-to-right strict > scan, as a combination of two partial scans: the larger
// value wins, a tie goes to the smaller index. Candidates only ever move off index 0 to a
// value greater than the current one, so a NaN candidate exists only when row[0] is NaN, and
// then every candidate is (NaN, 0), as the CPU's result is.
__host__ __device__ inline ArgMax firstMaximum(ArgMax a, ArgMax b)
{
    return b.value > a.value || (b.value == a.value && b.index < a.index) ? b : a;
}

__global__ void softmaxCrossEntropyKernel(const void* logits, DType logitsType, const float* labels, std::int64_t batch,
                                          std::int64_t classes, ScalarArg lossScale, void* dlogits, DType dlogitsType,
                                          double* lossSum, unsigned long long* correct)
{
    __shared__ ArgMax maxSlots[kReduceSlots];
    __shared__ double sumSlots[kReduceSlots];
    // Same fp32 division as the CPU: the scale is formed once, not per element.
    const float gradScale = exact::div(valueOf(lossScale), static_cast<float>(batch));
    for (std::int64_t r = blockIdx.x; r < batch; r += gridDim.x) {
        const std::int64_t base = r * classes;
        // Every thread starts from element 0, as the CPU's scan does, then scans its own
        // elements left to right.
        ArgMax local{loadAs(logits, logitsType, base), 0};
        for (std::int64_t c = 1 + threadIdx.x; c < classes; c += blockDim.x) {
            const float v = loadAs(logits, logitsType, base + c);
            if (v > local.value)
                local = {v, c};
        }
        const ArgMax best = blockReduce(local, firstMaximum, maxSlots);
        const float maxValue = best.value;

        double sum = 0;
        for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x)
            sum += exp(static_cast<double>(loadAs(logits, logitsType, base + c) - maxValue));
        sum = blockReduce(
            sum, [](double a, double b) { return a + b; }, sumSlots);
        const double logSum = log(sum);

        // The CPU truncates the fp32 label toward zero and asserts it names a class. A kernel
        // cannot stop the run, so a label it would reject turns that row's loss and gradient
        // into NaN: the failure shows in the loss instead of training on a wrong target.
        const float truncated = truncf(labels[r]);
        const bool valid = truncated >= 0.0f && truncated < static_cast<float>(classes) &&
                           static_cast<std::int64_t>(truncated) < classes;
        const std::int64_t label = valid ? static_cast<std::int64_t>(truncated) : -1;

        if (threadIdx.x == 0) {
            const double rowLoss =
                valid ? logSum - static_cast<double>(loadAs(logits, logitsType, base + label) - maxValue) : CUDART_NAN;
            atomicAdd(lossSum, rowLoss);
            if (valid && best.index == label)
                atomicAdd(correct, 1ull);
        }
        if (dlogits) {
            for (std::int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
                const double p = exp(static_cast<double>(loadAs(logits, logitsType, base + c) - maxValue) - logSum);
                const float g = valid ? static_cast<float>(p - (c == label ? 1.0 : 0.0)) * gradScale : CUDART_NAN_F;
                storeAs(dlogits, dlogitsType, base + c, g);
            }
        }
    }
}

} // namespace

void launchSoftmaxCrossEntropy(const void* logits, DType logitsType, const float* labels, std::int64_t batch,
                               std::int64_t classes, ScalarArg lossScale, void* dlogits, DType dlogitsType,
                               double* lossSum, unsigned long long* correct, cudaStream_t stream)
{
    cudaMemsetAsync(lossSum, 0, sizeof(double), stream);
    cudaMemsetAsync(correct, 0, sizeof(unsigned long long), stream);
    if (batch <= 0 || classes <= 0)
        return;
    // A warp per row for 10 classes, 256 threads from 225 classes on; the block loops over
    // wider rows. Rows beyond the grid are picked up by the row loop.
    const std::int64_t warps = std::clamp<std::int64_t>((classes + kWarpSize - 1) / kWarpSize, 1, 8);
    const auto threads = static_cast<unsigned>(warps * kWarpSize);
    const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(batch, 65535));
    softmaxCrossEntropyKernel<<<blocks, threads, 0, stream>>>(logits, logitsType, labels, batch, classes, lossScale,
                                                              dlogits, dlogitsType, lossSum, correct);
}

} // namespace mantissa::cuda
