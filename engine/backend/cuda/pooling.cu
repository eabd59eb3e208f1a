// Max and average pooling (NCHW) matching engine/backend/cpu/pooling.cpp:
// - max: padding counts as -inf, the window is scanned in row-major order and a value wins
//   only when strictly greater (or a NaN over a number), so the first maximum wins and a NaN
//   propagates; a window of -inf names its first in-image input. argmax stores the winner's
//   offset within its plane as a float (exact below 2^24, which the CPU asserts).
// - average: the divisor counts only in-image inputs (count_include_pad = false) unless the
//   geometry counts the padding, and the window sum is divided, not multiplied by a reciprocal.
// Both backward passes gather: one thread per input element visits the windows that cover it
// and sums their contributions in fp32, in the order in which the CPU's scatter adds them
// (output row ascending; within it output column ascending for max, descending for average,
// the CPU's loop over window columns), so dx is written once, rounded once, and bit-identical
// to the CPU's without atomics or scratch.
#include "engine/backend/cuda/device_numerics.cuh"
#include "engine/backend/cuda/kernels.h"

#include <math_constants.h>

namespace mantissa::cuda {

namespace {

// A half-open range [begin, end) of rows or columns; empty when begin >= end.
struct Span {
    std::int64_t begin, end;
};

// Input positions along one axis inside the window of output position o, clipped to the image.
__device__ __forceinline__ Span windowSpan(std::int64_t o, std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                                           std::int64_t extent)
{
    const std::int64_t start = o * stride - pad;
    return {start > 0 ? start : 0, start + kernel < extent ? start + kernel : extent};
}

// Output positions along one axis whose window covers input position i: those o with
// o * stride - pad <= i <= o * stride - pad + kernel - 1.
__device__ __forceinline__ Span coveringSpan(std::int64_t i, std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                                             std::int64_t outExtent)
{
    const std::int64_t lowest = i + pad - kernel + 1; // smallest o * stride that still reaches i
    const std::int64_t begin = lowest <= 0 ? 0 : (lowest + stride - 1) / stride;
    const std::int64_t end = (i + pad) / stride + 1; // i + pad >= 0: plain division floors
    return {begin, end < outExtent ? end : outExtent};
}

// Position of a flat NCHW index: its plane (n * channels + c), row and column.
struct Position {
    std::int64_t plane, row, col;
};

__device__ __forceinline__ Position positionOf(std::int64_t index, std::int64_t height, std::int64_t width)
{
    const std::int64_t rest = index / width;
    return {rest / height, rest % height, index % width};
}

__global__ void maxPoolForwardKernel(const void* x, DType xType, void* y, DType yType, float* argmax, PoolGeometry g,
                                     std::int64_t total)
{
    const std::int64_t inPlane = g.inH * g.inW;
    for (std::int64_t o = firstIndex(); o < total; o += gridStride()) {
        const Position at = positionOf(o, g.outH, g.outW);
        const Span rows = windowSpan(at.row, g.kH, g.strideH, g.padH, g.inH);
        const Span cols = windowSpan(at.col, g.kW, g.strideW, g.padW, g.inW);
        const std::int64_t base = at.plane * inPlane;
        float best = -CUDART_INF_F;
        std::int64_t winner = rows.begin * g.inW + cols.begin;
        for (std::int64_t ih = rows.begin; ih < rows.end; ++ih) {
            for (std::int64_t iw = cols.begin; iw < cols.end; ++iw) {
                const std::int64_t offset = ih * g.inW + iw;
                const float v = loadAs(x, xType, base + offset);
                if (v > best || (v != v && best == best)) {
                    best = v;
                    winner = offset;
                }
            }
        }
        storeAs(y, yType, o, best);
        argmax[o] = static_cast<float>(winner);
    }
}

// dx[i] = sum of dy over the windows covering i whose argmax is i; zero when none is.
__global__ void maxPoolBackwardKernel(const void* dy, DType dyType, const float* argmax, void* dx, DType dxType,
                                      PoolGeometry g, std::int64_t total)
{
    const std::int64_t outPlane = g.outH * g.outW;
    for (std::int64_t i = firstIndex(); i < total; i += gridStride()) {
        const Position at = positionOf(i, g.inH, g.inW);
        const Span outRows = coveringSpan(at.row, g.kH, g.strideH, g.padH, g.outH);
        const Span outCols = coveringSpan(at.col, g.kW, g.strideW, g.padW, g.outW);
        const std::int64_t offset = at.row * g.inW + at.col;
        const std::int64_t base = at.plane * outPlane;
        float sum = 0.0f;
        for (std::int64_t oh = outRows.begin; oh < outRows.end; ++oh) {
            for (std::int64_t ow = outCols.begin; ow < outCols.end; ++ow) {
                const std::int64_t o = base + oh * g.outW + ow;
                if (static_cast<std::int64_t>(argmax[o]) == offset)
                    sum += loadAs(dy, dyType, o);
            }
        }
        storeAs(dx, dxType, i, sum);
    }
}

__global__ void avgPoolForwardKernel(const void* x, DType xType, void* y, DType yType, PoolGeometry g,
                                     std::int64_t total)
{
    const std::int64_t inPlane = g.inH * g.inW;
    for (std::int64_t o = firstIndex(); o < total; o += gridStride()) {
        const Position at = positionOf(o, g.outH, g.outW);
        const Span rows = windowSpan(at.row, g.kH, g.strideH, g.padH, g.inH);
        const Span cols = windowSpan(at.col, g.kW, g.strideW, g.padW, g.inW);
        const std::int64_t base = at.plane * inPlane;
        float sum = 0.0f;
        for (std::int64_t ih = rows.begin; ih < rows.end; ++ih)
            for (std::int64_t iw = cols.begin; iw < cols.end; ++iw)
                sum += loadAs(x, xType, base + ih * g.inW + iw);
        const std::int64_t inside = (rows.end - rows.begin) * (cols.end - cols.begin);
        storeAs(y, yType, o, sum / static_cast<float>(g.averageDivisor(inside)));
    }
}

// dx[i] = sum over the windows covering i of dy / (that window's in-image count).
__global__ void avgPoolBackwardKernel(const void* dy, DType dyType, void* dx, DType dxType, PoolGeometry g,
                                      std::int64_t total)
{
    const std::int64_t outPlane = g.outH * g.outW;
    for (std::int64_t i = firstIndex(); i < total; i += gridStride()) {
        const Position at = positionOf(i, g.inH, g.inW);
        const Span outRows = coveringSpan(at.row, g.kH, g.strideH, g.padH, g.outH);
        const Span outCols = coveringSpan(at.col, g.kW, g.strideW, g.padW, g.outW);
        const std::int64_t base = at.plane * outPlane;
        float sum = 0.0f;
        for (std::int64_t oh = outRows.begin; oh < outRows.end; ++oh) {
            const Span rows = windowSpan(oh, g.kH, g.strideH, g.padH, g.inH);
            // Descending: the CPU reaches this element through window columns kw ascending,
            // and a larger kw means a smaller output column.
            for (std::int64_t ow = outCols.end - 1; ow >= outCols.begin; --ow) {
                const Span cols = windowSpan(ow, g.kW, g.strideW, g.padW, g.inW);
                const std::int64_t inside = (rows.end - rows.begin) * (cols.end - cols.begin);
                sum += loadAs(dy, dyType, base + oh * g.outW + ow) / static_cast<float>(g.averageDivisor(inside));
            }
        }
        storeAs(dx, dxType, i, sum);
    }
}

std::int64_t inputCount(const PoolGeometry& g) { return g.n * g.channels * g.inH * g.inW; }
std::int64_t outputCount(const PoolGeometry& g) { return g.n * g.channels * g.outH * g.outW; }

} // namespace

void launchMaxPoolForward(const void* x, DType xType, void* y, DType yType, float* argmax, const PoolGeometry& g,
                          cudaStream_t stream)
{
    const std::int64_t total = outputCount(g);
    if (total <= 0)
        return;
    maxPoolForwardKernel<<<blocksFor(total), kThreadsPerBlock, 0, stream>>>(x, xType, y, yType, argmax, g, total);
}

void launchMaxPoolBackward(const void* dy, DType dyType, const float* argmax, void* dx, DType dxType,
                           const PoolGeometry& g, cudaStream_t stream)
{
    const std::int64_t total = inputCount(g);
    if (total <= 0)
        return;
    maxPoolBackwardKernel<<<blocksFor(total), kThreadsPerBlock, 0, stream>>>(dy, dyType, argmax, dx, dxType, g, total);
}

void launchAvgPoolForward(const void* x, DType xType, void* y, DType yType, const PoolGeometry& g, cudaStream_t stream)
{
    const std::int64_t total = outputCount(g);
    if (total <= 0)
        return;
    avgPoolForwardKernel<<<blocksFor(total), kThreadsPerBlock, 0, stream>>>(x, xType, y, yType, g, total);
}

void launchAvgPoolBackward(const void* dy, DType dyType, void* dx, DType dxType, const PoolGeometry& g,
                           cudaStream_t stream)
{
    const std::int64_t total = inputCount(g);
    if (total <= 0)
        return;
    avgPoolBackwardKernel<<<blocksFor(total), kThreadsPerBlock, 0, stream>>>(dy, dyType, dx, dxType, g, total);
}

} // namespace mantissa::cuda
