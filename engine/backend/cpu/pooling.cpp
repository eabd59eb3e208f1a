// Max and average pooling (NCHW), one plane per task, in fp32 whatever the storage dtype.
// Max pooling treats padding as -inf and keeps the first maximum of a window in row-major
// order (as PyTorch does), so ties route the whole gradient to one input; a NaN wins the
// window so that it propagates. argmax holds the winner's offset within its plane as a
// float, exact below 2^24. Average pooling divides by the number of in-bounds inputs
// (count_include_pad = false): a border window is not diluted by the zeros of the padding.
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_view.h"
#include "engine/util/check.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mantissa {

namespace {

// The in-bounds part [h0, h1) x [w0, w1) of the window of output (oh, ow).
struct Window {
    std::int64_t h0, h1, w0, w1;
    std::int64_t size() const { return (h1 - h0) * (w1 - w0); }
};

Window windowOf(const PoolGeometry& g, std::int64_t oh, std::int64_t ow)
{
    const std::int64_t h = oh * g.strideH - g.padH, w = ow * g.strideW - g.padW;
    return {std::max<std::int64_t>(h, 0), std::min(h + g.kH, g.inH), std::max<std::int64_t>(w, 0),
            std::min(w + g.kW, g.inW)};
}

void checkGeometry(const PoolGeometry& g, const Tensor& input, const Tensor& output)
{
    MANTISSA_ASSERT(input.numel() == g.n * g.channels * g.inH * g.inW);
    MANTISSA_ASSERT(output.numel() == g.n * g.channels * g.outH * g.outW);
    MANTISSA_ASSERT(g.outH == slidingOutput(g.inH, g.kH, g.strideH, g.padH) &&
                    g.outW == slidingOutput(g.inW, g.kW, g.strideW, g.padW) && g.outH > 0 && g.outW > 0);
    // Every window must hold at least one input (the layer checks padding <= kernel / 2).
    MANTISSA_ASSERT(2 * g.padH <= g.kH && 2 * g.padW <= g.kW);
}

// --- kernels --------------------------------------------------------------------------------

void maxPoolPlane(const float* x, const PoolGeometry& g, float* y, float* argmax)
{
    for (std::int64_t oh = 0; oh < g.outH; ++oh) {
        for (std::int64_t ow = 0; ow < g.outW; ++ow) {
            const Window win = windowOf(g, oh, ow);
            float best = -std::numeric_limits<float>::infinity();
            std::int64_t where = win.h0 * g.inW + win.w0;
            for (std::int64_t ih = win.h0; ih < win.h1; ++ih) {
                for (std::int64_t iw = win.w0; iw < win.w1; ++iw) {
                    const float v = x[ih * g.inW + iw];
                    if (v > best || (std::isnan(v) && !std::isnan(best))) {
                        best = v;
                        where = ih * g.inW + iw;
                    }
                }
            }
            y[oh * g.outW + ow] = best;
            argmax[oh * g.outW + ow] = static_cast<float>(where);
        }
    }
}

void avgPoolPlane(const float* x, const PoolGeometry& g, float* y)
{
    for (std::int64_t oh = 0; oh < g.outH; ++oh) {
        for (std::int64_t ow = 0; ow < g.outW; ++ow) {
            const Window win = windowOf(g, oh, ow);
            float sum = 0;
            for (std::int64_t ih = win.h0; ih < win.h1; ++ih)
                for (std::int64_t iw = win.w0; iw < win.w1; ++iw)
                    sum += x[ih * g.inW + iw];
            y[oh * g.outW + ow] = sum / static_cast<float>(win.size());
        }
    }
}

void avgPoolBackwardPlane(const float* dy, const PoolGeometry& g, float* dx)
{
    std::fill_n(dx, g.inH * g.inW, 0.0f);
    for (std::int64_t oh = 0; oh < g.outH; ++oh) {
        for (std::int64_t ow = 0; ow < g.outW; ++ow) {
            const Window win = windowOf(g, oh, ow);
            const float share = dy[oh * g.outW + ow] / static_cast<float>(win.size());
            for (std::int64_t ih = win.h0; ih < win.h1; ++ih)
                for (std::int64_t iw = win.w0; iw < win.w1; ++iw)
                    dx[ih * g.inW + iw] += share;
        }
    }
}

} // namespace

// --- public ops -------------------------------------------------------------------------------

void CpuBackend::maxPoolForward(const Tensor& x, Tensor& y, Tensor& argmax, const PoolGeometry& g)
{
    checkGeometry(g, x, y);
    MANTISSA_ASSERT(argmax.dtype() == DType::F32 && argmax.numel() == y.numel());
    MANTISSA_ASSERT(g.inH * g.inW <= (std::int64_t{1} << 24));
    cpu::FloatInput fx(x);
    cpu::FloatOutput fy(y);
    const std::int64_t planes = g.n * g.channels, in = g.inH * g.inW, out = g.outH * g.outW;
    const float* px = fx.data();
    float* py = fy.data();
    float* pa = argmax.f32();
#pragma omp parallel for schedule(static) if (planes * in > 65536)
    for (std::int64_t p = 0; p < planes; ++p)
        maxPoolPlane(px + p * in, g, py + p * out, pa + p * out);
    fy.commit();
}

void CpuBackend::maxPoolBackward(const Tensor& dy, const Tensor& argmax, Tensor& dx, const PoolGeometry& g)
{
    checkGeometry(g, dx, dy);
    MANTISSA_ASSERT(argmax.dtype() == DType::F32 && argmax.numel() == dy.numel());
    cpu::FloatInput fdy(dy);
    cpu::FloatOutput fdx(dx);
    const std::int64_t planes = g.n * g.channels, in = g.inH * g.inW, out = g.outH * g.outW;
    const float* pdy = fdy.data();
    const float* pa = argmax.f32();
    float* pdx = fdx.data();
#pragma omp parallel for schedule(static) if (planes * in > 65536)
    for (std::int64_t p = 0; p < planes; ++p) {
        float* plane = pdx + p * in;
        std::fill_n(plane, in, 0.0f);
        // Overlapping windows (stride < kernel) may share a winner: gradients add.
        for (std::int64_t o = 0; o < out; ++o)
            plane[static_cast<std::int64_t>(pa[p * out + o])] += pdy[p * out + o];
    }
    fdx.commit();
}

void CpuBackend::avgPoolForward(const Tensor& x, Tensor& y, const PoolGeometry& g)
{
    checkGeometry(g, x, y);
    cpu::FloatInput fx(x);
    cpu::FloatOutput fy(y);
    const std::int64_t planes = g.n * g.channels, in = g.inH * g.inW, out = g.outH * g.outW;
    const float* px = fx.data();
    float* py = fy.data();
#pragma omp parallel for schedule(static) if (planes * in > 65536)
    for (std::int64_t p = 0; p < planes; ++p)
        avgPoolPlane(px + p * in, g, py + p * out);
    fy.commit();
}

void CpuBackend::avgPoolBackward(const Tensor& dy, Tensor& dx, const PoolGeometry& g)
{
    checkGeometry(g, dx, dy);
    cpu::FloatInput fdy(dy);
    cpu::FloatOutput fdx(dx);
    const std::int64_t planes = g.n * g.channels, in = g.inH * g.inW, out = g.outH * g.outW;
    const float* pdy = fdy.data();
    float* pdx = fdx.data();
#pragma omp parallel for schedule(static) if (planes * in > 65536)
    for (std::int64_t p = 0; p < planes; ++p)
        avgPoolBackwardPlane(pdy + p * out, g, pdx + p * in);
    fdx.commit();
}

} // namespace mantissa
