// The kernels attention is built from besides its GEMMs (cublas_gemm.cpp): the axis swap that
// moves heads out of the token axis and back, and the softmax over the keys with its causal
// mask, matching cpu/attention.cpp.
//
// - swapAxes is a copy: bit for bit.
// - The fp32 softmax is one block per row: the maximum of the visible scores, expf of each
//   difference, their sum by a fixed tree, one division per key; hidden keys are 0 and never
//   read. The CPU runs oneDNN's softmax, which sums in another order and may multiply by the
//   reciprocal, so the two agree to a few fp32 ulps, not bit for bit.
// - The softmax in a 16-bit type is the CPU's loop, left to right on one thread per row, with
//   every step rounded to the type. Its exp is taken in double and rounded to fp32, which is
//   glibc's expf (within 0.502 ulp of the exact value) except a few times in a thousand, and
//   then rounded to 16 bits, where a value that close to a 16-bit rounding boundary is rarer
//   still; so the rows match the CPU's bit for bit (the parity test holds them to that). The
//   exp is computed again for the quotients rather than kept in probs, whose type may not be
//   the arithmetic's. Speed follow-up: a row per warp with the running sum kept serial.
// - The backward is one block per row: sum(dprobs * probs) by a fixed tree, then one fp32
//   expression per key.
#include "engine/backend/cuda/block_reduce.cuh"
#include "engine/backend/cuda/device_numerics.cuh"
#include "engine/backend/cuda/explicit_rounding.cuh"
#include "engine/backend/cuda/kernels.h"

#include <math_constants.h>

#include <algorithm>

namespace mantissa::cuda {

namespace {

__global__ void swapAxesKernel(const void* x, DType xType, void* y, DType yType, std::int64_t outer, std::int64_t rows,
                               std::int64_t cols, std::int64_t inner)
{
    const std::int64_t n = outer * rows * cols * inner;
    // i walks y, [outer, cols, rows, inner]; the source is x, [outer, rows, cols, inner].
    for (std::int64_t i = firstIndex(); i < n; i += gridStride()) {
        const std::int64_t e = i % inner;
        const std::int64_t r = (i / inner) % rows;
        const std::int64_t c = (i / (inner * rows)) % cols;
        const std::int64_t o = i / (inner * rows * cols);
        storeAs(y, yType, i, loadAs(x, xType, ((o * rows + r) * cols + c) * inner + e));
    }
}

// Keys row `row` may look at: itself and the keys before it under a causal mask.
__device__ __forceinline__ std::int64_t visibleKeys(std::int64_t row, std::int64_t queries, std::int64_t keys,
                                                    bool causal)
{
    return causal ? (row % queries) + 1 + (keys - queries) : keys;
}

__device__ float maxOf(float a, float b) { return fmaxf(a, b); }
__device__ float sumOf(float a, float b) { return a + b; }

__global__ void softmaxFp32Kernel(const void* scores, DType scoresType, void* probs, DType probsType, std::int64_t rows,
                                  std::int64_t queries, std::int64_t keys, bool causal)
{
    __shared__ float slots[kReduceSlots];
    for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const std::int64_t base = row * keys;
        const std::int64_t visible = visibleKeys(row, queries, keys, causal);
        float max = -CUDART_INF_F;
        for (std::int64_t j = threadIdx.x; j < visible; j += blockDim.x)
            max = fmaxf(max, loadAs(scores, scoresType, base + j));
        max = blockReduce(max, maxOf, slots);
        float sum = 0.0f;
        for (std::int64_t j = threadIdx.x; j < visible; j += blockDim.x)
            sum += expf(exact::sub(loadAs(scores, scoresType, base + j), max));
        sum = blockReduce(sum, sumOf, slots);
        for (std::int64_t j = threadIdx.x; j < keys; j += blockDim.x) {
            const float p =
                j < visible ? exact::div(expf(exact::sub(loadAs(scores, scoresType, base + j), max)), sum) : 0.0f;
            storeAs(probs, probsType, base + j, p);
        }
    }
}

// expf as glibc computes it, to the last bit in all but rare cases (see the top of the file).
__device__ __forceinline__ float hostLikeExp(float v) { return static_cast<float>(exp(static_cast<double>(v))); }

// CpuBackend's softmaxRow, line for line, one thread per row.
__global__ void softmaxRoundedKernel(const void* scores, DType scoresType, void* probs, DType probsType,
                                     std::int64_t rows, std::int64_t queries, std::int64_t keys, bool causal,
                                     DType arithmetic)
{
    const auto r = [arithmetic](float v) { return roundedTo(arithmetic, v); };
    for (std::int64_t row = firstIndex(); row < rows; row += gridStride()) {
        const std::int64_t base = row * keys;
        const std::int64_t visible = visibleKeys(row, queries, keys, causal);
        float max = -CUDART_INF_F;
        for (std::int64_t j = 0; j < visible; ++j) {
            const float s = loadAs(scores, scoresType, base + j);
            max = max < s ? s : max; // std::max(max, s): a NaN score is passed over
        }
        float sum = 0.0f;
        for (std::int64_t j = 0; j < visible; ++j)
            sum = r(exact::add(sum, r(hostLikeExp(r(exact::sub(loadAs(scores, scoresType, base + j), max))))));
        for (std::int64_t j = 0; j < keys; ++j) {
            float p = 0.0f;
            if (j < visible)
                p = r(exact::div(r(hostLikeExp(r(exact::sub(loadAs(scores, scoresType, base + j), max)))), sum));
            storeAs(probs, probsType, base + j, p);
        }
    }
}

__global__ void softmaxBackwardKernel(const void* probs, DType probsType, const void* dprobs, DType dprobsType,
                                      void* dscores, DType dscoresType, std::int64_t rows, std::int64_t keys)
{
    __shared__ float slots[kReduceSlots];
    for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const std::int64_t base = row * keys;
        float dot = 0.0f;
        for (std::int64_t j = threadIdx.x; j < keys; j += blockDim.x)
            dot = exact::fma(loadAs(dprobs, dprobsType, base + j), loadAs(probs, probsType, base + j), dot);
        dot = blockReduce(dot, sumOf, slots);
        for (std::int64_t j = threadIdx.x; j < keys; j += blockDim.x) {
            const float p = loadAs(probs, probsType, base + j);
            storeAs(dscores, dscoresType, base + j,
                    exact::mul(p, exact::sub(loadAs(dprobs, dprobsType, base + j), dot)));
        }
    }
}

// A warp per 32 keys, up to 256 threads; longer rows loop.
unsigned threadsForRow(std::int64_t keys)
{
    const std::int64_t warps = std::clamp<std::int64_t>((keys + kWarpSize - 1) / kWarpSize, 1, 8);
    return static_cast<unsigned>(warps * kWarpSize);
}

unsigned blocksForRows(std::int64_t rows) { return static_cast<unsigned>(std::min<std::int64_t>(rows, 65535)); }

} // namespace

void launchSwapAxes(const void* x, DType xType, void* y, DType yType, std::int64_t outer, std::int64_t rows,
                    std::int64_t cols, std::int64_t inner, cudaStream_t stream)
{
    const std::int64_t n = outer * rows * cols * inner;
    if (n <= 0)
        return;
    swapAxesKernel<<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(x, xType, y, yType, outer, rows, cols, inner);
}

void launchSoftmaxForward(const void* scores, DType scoresType, void* probs, DType probsType, std::int64_t rows,
                          std::int64_t queries, std::int64_t keys, bool causal, DType arithmetic, cudaStream_t stream)
{
    if (rows <= 0 || keys <= 0)
        return;
    if (arithmetic == DType::F32)
        softmaxFp32Kernel<<<blocksForRows(rows), threadsForRow(keys), 0, stream>>>(scores, scoresType, probs, probsType,
                                                                                   rows, queries, keys, causal);
    else
        softmaxRoundedKernel<<<blocksFor(rows, 128), 128, 0, stream>>>(scores, scoresType, probs, probsType, rows,
                                                                       queries, keys, causal, arithmetic);
}

void launchSoftmaxBackward(const void* probs, DType probsType, const void* dprobs, DType dprobsType, void* dscores,
                           DType dscoresType, std::int64_t rows, std::int64_t keys, cudaStream_t stream)
{
    if (rows <= 0 || keys <= 0)
        return;
    softmaxBackwardKernel<<<blocksForRows(rows), threadsForRow(keys), 0, stream>>>(probs, probsType, dprobs, dprobsType,
                                                                                   dscores, dscoresType, rows, keys);
}

} // namespace mantissa::cuda
