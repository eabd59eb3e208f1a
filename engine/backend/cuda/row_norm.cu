// Layer norm and RMS norm over the last axis, matching cpu/row_norm.cpp. One block per row.
// fp32 statistics are the CPU's two passes (the mean, then the squared deviations from it),
// each summed in double, here by a fixed tree instead of the CPU's fp32 lanes folded into a
// double, so mean and invStd agree with the CPU to fp32 rounding, not bit for bit. Statistics
// in a 16-bit type are the CPU's left-to-right loop run by one thread of the block with every
// step rounded to the type, which is bit for bit the CPU's: those roundings are the point of
// the setting (a running 16-bit sum that stops growing, squares that overflow), and a tree
// would round elsewhere. Normalising and the gain run in fp32 and y is rounded once; the
// product-plus-bias is one fused multiply-add, as GCC contracts it on the CPU.
//
// Backward: dx per row from sums in double, as the CPU; dgain and dbias are one thread per
// column summing the rows in order in double, as the CPU's loop does, so they do not depend on
// the launch. Speed follow-up: that column pass is serial in the rows (a two-level reduction
// over row tiles, folded in a fixed order, would keep it deterministic).
#include "engine/backend/cuda/block_reduce.cuh"
#include "engine/backend/cuda/device_numerics.cuh"
#include "engine/backend/cuda/explicit_rounding.cuh"
#include "engine/backend/cuda/kernels.h"

#include <algorithm>

namespace mantissa::cuda {

namespace {

struct RowStatistics {
    float mean, invStd;
};

__device__ double sumOf(double a, double b) { return a + b; }

// The two fp32 passes over one row, by the whole block.
__device__ RowStatistics fp32Statistics(RowNormKind kind, const void* x, DType xType, std::int64_t base,
                                        std::int64_t width, float epsilon, double* slots)
{
    const auto n = static_cast<double>(width);
    float mean = 0.0f;
    if (kind == RowNormKind::LayerNorm) {
        double sum = 0;
        for (std::int64_t c = threadIdx.x; c < width; c += blockDim.x)
            sum += loadAs(x, xType, base + c);
        mean = static_cast<float>(blockReduce(sum, sumOf, slots) / n);
    }
    double squares = 0;
    for (std::int64_t c = threadIdx.x; c < width; c += blockDim.x) {
        const float d = exact::sub(loadAs(x, xType, base + c), mean);
        squares += exact::mul(d, d);
    }
    const double variance = blockReduce(squares, sumOf, slots) / n;
    return {mean, static_cast<float>(1.0 / sqrt(variance + static_cast<double>(epsilon)))};
}

// CpuBackend's roundedStatistics, line for line, on one thread.
__device__ RowStatistics roundedStatistics(RowNormKind kind, const void* x, DType xType, std::int64_t base,
                                           std::int64_t width, float epsilon, DType type)
{
    const auto r = [type](float v) { return roundedTo(type, v); };
    const float n = r(static_cast<float>(width));
    float mean = 0.0f;
    if (kind == RowNormKind::LayerNorm) {
        float sum = 0.0f;
        for (std::int64_t i = 0; i < width; ++i)
            sum = r(exact::add(sum, loadAs(x, xType, base + i)));
        mean = r(exact::div(sum, n));
    }
    float squares = 0.0f;
    for (std::int64_t i = 0; i < width; ++i) {
        const float d = r(exact::sub(loadAs(x, xType, base + i), mean));
        squares = r(exact::add(squares, r(exact::mul(d, d))));
    }
    const float variance = r(exact::div(squares, n));
    return {mean, r(exact::div(1.0f, r(exact::sqrt(r(exact::add(variance, r(epsilon)))))))};
}

__global__ void rowNormForwardKernel(RowNormKind kind, const void* x, DType xType, const float* gain, const float* bias,
                                     void* y, DType yType, float* mean, float* invStd, std::int64_t rows,
                                     std::int64_t width, float epsilon, DType statistics)
{
    __shared__ double slots[kReduceSlots];
    __shared__ RowStatistics rounded;
    for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const std::int64_t base = row * width;
        RowStatistics s;
        if (statistics == DType::F32) {
            s = fp32Statistics(kind, x, xType, base, width, epsilon, slots);
        } else {
            if (threadIdx.x == 0)
                rounded = roundedStatistics(kind, x, xType, base, width, epsilon, statistics);
            __syncthreads();
            s = rounded;
        }
        if (threadIdx.x == 0) {
            mean[row] = s.mean;
            invStd[row] = s.invStd;
        }
        for (std::int64_t c = threadIdx.x; c < width; c += blockDim.x) {
            const float normalised = exact::mul(exact::sub(loadAs(x, xType, base + c), s.mean), s.invStd);
            storeAs(y, yType, base + c, exact::fma(normalised, gain[c], bias ? bias[c] : 0.0f));
        }
        __syncthreads(); // `rounded` is rewritten for the next row only after every thread read it
    }
}

// With xhat = (x - mean) * invStd and dxhat = dy * gain:
//   layer norm: dx = invStd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
//   RMS norm:   dx = invStd * (dxhat - xhat * mean(dxhat * xhat))
__global__ void rowNormInputGradKernel(RowNormKind kind, const void* x, DType xType, const void* dy, DType dyType,
                                       const float* gain, const float* mean, const float* invStd, void* dx,
                                       DType dxType, std::int64_t rows, std::int64_t width)
{
    __shared__ double slots[kReduceSlots];
    const auto n = static_cast<double>(width);
    for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const std::int64_t base = row * width;
        const float mu = mean[row], inv = invStd[row];
        double sumDxhat = 0, sumDxhatXhat = 0;
        for (std::int64_t c = threadIdx.x; c < width; c += blockDim.x) {
            const double dxhat = static_cast<double>(loadAs(dy, dyType, base + c)) * gain[c];
            sumDxhat += dxhat;
            sumDxhatXhat += dxhat * exact::mul(exact::sub(loadAs(x, xType, base + c), mu), inv);
        }
        sumDxhat = blockReduce(sumDxhat, sumOf, slots);
        sumDxhatXhat = blockReduce(sumDxhatXhat, sumOf, slots);
        const double meanDxhat = kind == RowNormKind::LayerNorm ? sumDxhat / n : 0.0;
        const double meanDxhatXhat = sumDxhatXhat / n;
        for (std::int64_t c = threadIdx.x; c < width; c += blockDim.x) {
            const double xhat = exact::mul(exact::sub(loadAs(x, xType, base + c), mu), inv);
            const double dxhat = static_cast<double>(loadAs(dy, dyType, base + c)) * gain[c];
            storeAs(dx, dxType, base + c, static_cast<float>(inv * (dxhat - meanDxhat - xhat * meanDxhatXhat)));
        }
    }
}

__global__ void rowNormParamGradKernel(const void* x, DType xType, const void* dy, DType dyType, const float* mean,
                                       const float* invStd, float* dgain, float* dbias, std::int64_t rows,
                                       std::int64_t width)
{
    for (std::int64_t c = firstIndex(); c < width; c += gridStride()) {
        double gainSum = 0, biasSum = 0;
        for (std::int64_t row = 0; row < rows; ++row) {
            const float g = loadAs(dy, dyType, row * width + c);
            const float xhat = exact::mul(exact::sub(loadAs(x, xType, row * width + c), mean[row]), invStd[row]);
            gainSum += static_cast<double>(g) * xhat;
            biasSum += g;
        }
        dgain[c] = static_cast<float>(gainSum);
        if (dbias)
            dbias[c] = static_cast<float>(biasSum);
    }
}

// A warp per 32 values of a row, up to 256 threads; wider rows loop.
unsigned threadsForRow(std::int64_t width)
{
    const std::int64_t warps = std::clamp<std::int64_t>((width + kWarpSize - 1) / kWarpSize, 1, 8);
    return static_cast<unsigned>(warps * kWarpSize);
}

unsigned blocksForRows(std::int64_t rows) { return static_cast<unsigned>(std::min<std::int64_t>(rows, 65535)); }

} // namespace

void launchRowNormForward(RowNormKind kind, const void* x, DType xType, const float* gain, const float* bias, void* y,
                          DType yType, float* mean, float* invStd, std::int64_t rows, std::int64_t width, float epsilon,
                          DType statistics, cudaStream_t stream)
{
    if (rows <= 0 || width <= 0)
        return;
    rowNormForwardKernel<<<blocksForRows(rows), threadsForRow(width), 0, stream>>>(
        kind, x, xType, gain, bias, y, yType, mean, invStd, rows, width, epsilon, statistics);
}

void launchRowNormBackward(RowNormKind kind, const void* x, DType xType, const void* dy, DType dyType,
                           const float* gain, const float* mean, const float* invStd, void* dx, DType dxType,
                           float* dgain, float* dbias, std::int64_t rows, std::int64_t width, cudaStream_t stream)
{
    if (width <= 0)
        return;
    rowNormParamGradKernel<<<blocksFor(width), kThreadsPerBlock, 0, stream>>>(x, xType, dy, dyType, mean, invStd, dgain,
                                                                              dbias, rows, width);
    if (rows <= 0)
        return;
    rowNormInputGradKernel<<<blocksForRows(rows), threadsForRow(width), 0, stream>>>(
        kind, x, xType, dy, dyType, gain, mean, invStd, dx, dxType, rows, width);
}

} // namespace mantissa::cuda
