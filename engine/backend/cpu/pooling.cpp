// Max and average pooling (NCHW), one plane per task, in fp32 whatever the storage dtype.
// Max pooling treats padding as -inf and keeps the first maximum of a window in row-major
// order (as PyTorch does), so ties route the whole gradient to one input; a NaN wins the
// window so that it propagates. argmax holds the winner's offset within its plane as a
// float, exact below 2^24. Average pooling divides by the number of in-bounds inputs
// (count_include_pad = false): a border window is not diluted by the zeros of the padding,
// unless the geometry counts the padding (PoolGeometry::averageDivisor).
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_chunks.h"
#include "engine/util/check.h"

#include <algorithm>
#include <limits>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace mantissa {

namespace {

// Output columns [lo, hi) whose input column ow * strideW - padW + kw lies inside the image.
struct ColumnRange {
    std::int64_t lo, hi;
};

std::vector<ColumnRange> columnRanges(const PoolGeometry& g)
{
    std::vector<ColumnRange> ranges(static_cast<std::size_t>(g.kW));
    for (std::int64_t kw = 0; kw < g.kW; ++kw) {
        const std::int64_t offset = kw - g.padW;
        std::int64_t lo = offset >= 0 ? 0 : (-offset + g.strideW - 1) / g.strideW;
        const std::int64_t hi =
            g.inW - offset <= 0 ? 0 : std::min(g.outW, (g.inW - offset + g.strideW - 1) / g.strideW);
        ranges[static_cast<std::size_t>(kw)] = {std::min(lo, hi), hi};
    }
    return ranges;
}

// Rows [h0, h1) of the input inside the window of output row oh.
void rowRange(const PoolGeometry& g, std::int64_t oh, std::int64_t& h0, std::int64_t& h1)
{
    const std::int64_t h = oh * g.strideH - g.padH;
    h0 = std::max<std::int64_t>(h, 0);
    h1 = std::min(h + g.kH, g.inH);
}

// Inputs inside the window of output column ow (average pooling's divisor).
std::int64_t columnsInside(const PoolGeometry& g, std::int64_t ow)
{
    const std::int64_t w = ow * g.strideW - g.padW;
    return std::min(w + g.kW, g.inW) - std::max<std::int64_t>(w, 0);
}

void checkGeometry(const PoolGeometry& g, const Tensor& input, const Tensor& output)
{
    MANTISSA_ASSERT(input.numel() == g.n * g.channels * g.inH * g.inW);
    MANTISSA_ASSERT(output.numel() == g.n * g.channels * g.outH * g.outW);
    MANTISSA_ASSERT(g.windowsHoldInputs());
}

// --- kernels --------------------------------------------------------------------------------
// Each computes one output row at a time, taking every window offset (kh, kw) in row-major
// order across the whole row: loops along a row vectorise, a loop over one window (four
// values for a 2x2 pool) does not.

#if defined(__AVX2__)

// src[0], src[stride], ... in the first `count` lanes (others 0), reading nothing past the
// last of them. Gathers are slow, so strides 1 and 2 (the common pools) use masked loads,
// de-interleaved for stride 2.
inline __m256 loadPrefix(const float* src, std::int64_t stride, std::int64_t count)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const auto n = static_cast<std::int32_t>(std::min<std::int64_t>(count, 8));
    if (stride == 1)
        return _mm256_maskload_ps(src, _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lane));
    if (stride == 2) {
        const std::int32_t span = 2 * n - 1; // src[0 .. span - 1]
        const __m256 low = _mm256_maskload_ps(src, _mm256_cmpgt_epi32(_mm256_set1_epi32(span), lane));
        const __m256 high = _mm256_maskload_ps(src + 8, _mm256_cmpgt_epi32(_mm256_set1_epi32(span - 8), lane));
        // [l0 l2 h0 h2 | l4 l6 h4 h6], then its 64-bit pairs reordered to [l0 l2 l4 l6 | h0 h2 h4 h6]
        const __m256 even = _mm256_shuffle_ps(low, high, _MM_SHUFFLE(2, 0, 2, 0));
        return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even), _MM_SHUFFLE(3, 1, 2, 0)));
    }
    const __m256i index = _mm256_mullo_epi32(lane, _mm256_set1_epi32(static_cast<std::int32_t>(stride)));
    const __m256 mask = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(n), lane));
    return _mm256_mask_i32gather_ps(_mm256_setzero_ps(), src, index, mask, 4);
}

// One output row of max pooling: y[ow] and argmax[ow] for every ow, over the input rows
// [h0, h1); `scratch` holds 2 * (outW + 8) floats. A value takes a window only when strictly
// greater (or a NaN over a number), so the first maximum wins. On random data every comparison
// is a coin toss and a branch per comparison mispredicts half the time, so eight windows are
// kept in registers and updated by blends.
void maxPoolRow(const float* x, const PoolGeometry& g, const std::vector<ColumnRange>& columns, std::int64_t h0,
                std::int64_t h1, float* scratch, float* y, float* argmax)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const auto stride = static_cast<std::int32_t>(g.strideW);
    const auto inW = static_cast<std::int32_t>(g.inW);
    // Whole vectors are stored to scratch rows (a masked store is slow on AMD) and copied out.
    float* bestRow = scratch;
    float* whereRow = scratch + g.outW + 8;
    for (std::int64_t ow0 = 0; ow0 < g.outW; ow0 += 8) {
        // Input columns of the eight windows' first taps; offsets are exact as floats below 2^24.
        const __m256i column = _mm256_sub_epi32(
            _mm256_mullo_epi32(_mm256_add_epi32(_mm256_set1_epi32(static_cast<std::int32_t>(ow0)), lane),
                               _mm256_set1_epi32(stride)),
            _mm256_set1_epi32(static_cast<std::int32_t>(g.padW)));
        __m256 best = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
        // The window's first input, so that a window of -inf still names one of its own.
        __m256 at = _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_max_epi32(column, _mm256_setzero_si256()),
                                                        _mm256_set1_epi32(static_cast<std::int32_t>(h0) * inW)));
        for (std::int64_t ih = h0; ih < h1; ++ih) {
            const float* row = x + ih * g.inW;
            for (std::int64_t kw = 0; kw < g.kW; ++kw) {
                const auto [lo, hi] = columns[static_cast<std::size_t>(kw)];
                const std::int64_t first = std::max(lo, ow0), last = std::min(hi, ow0 + 8);
                if (first >= last)
                    continue;
                const __m256i tap = _mm256_add_epi32(column, _mm256_set1_epi32(static_cast<std::int32_t>(kw)));
                const __m256i valid = _mm256_and_si256(
                    _mm256_cmpgt_epi32(lane, _mm256_set1_epi32(static_cast<std::int32_t>(first - ow0 - 1))),
                    _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<std::int32_t>(last - ow0)), lane));
                // Left padding leaves the first lanes outside the row: those windows gather.
                const __m256 v = first == ow0 ? loadPrefix(row + ow0 * g.strideW + kw - g.padW, g.strideW, last - ow0)
                                              : _mm256_mask_i32gather_ps(_mm256_setzero_ps(), row, tap,
                                                                         _mm256_castsi256_ps(valid), 4);
                const __m256 nanOverNumber =
                    _mm256_andnot_ps(_mm256_cmp_ps(best, best, _CMP_UNORD_Q), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
                const __m256 takes = _mm256_and_ps(_mm256_or_ps(_mm256_cmp_ps(v, best, _CMP_GT_OQ), nanOverNumber),
                                                   _mm256_castsi256_ps(valid));
                const __m256 offsets =
                    _mm256_cvtepi32_ps(_mm256_add_epi32(tap, _mm256_set1_epi32(static_cast<std::int32_t>(ih) * inW)));
                best = _mm256_blendv_ps(best, v, takes);
                at = _mm256_blendv_ps(at, offsets, takes);
            }
        }
        _mm256_storeu_ps(bestRow + ow0, best);
        _mm256_storeu_ps(whereRow + ow0, at);
    }
    std::copy_n(bestRow, g.outW, y);
    std::copy_n(whereRow, g.outW, argmax);
}

#else

// maxPoolRow for builds without AVX2: the same scan order, one output at a time.
void maxPoolRow(const float* x, const PoolGeometry& g, const std::vector<ColumnRange>& columns, std::int64_t h0,
                std::int64_t h1, float*, float* y, float* argmax)
{
    for (std::int64_t ow = 0; ow < g.outW; ++ow) {
        y[ow] = -std::numeric_limits<float>::infinity();
        argmax[ow] = static_cast<float>(h0 * g.inW + std::max<std::int64_t>(ow * g.strideW - g.padW, 0));
    }
    for (std::int64_t ih = h0; ih < h1; ++ih) {
        for (std::int64_t kw = 0; kw < g.kW; ++kw) {
            const auto [lo, hi] = columns[static_cast<std::size_t>(kw)];
            for (std::int64_t ow = lo; ow < hi; ++ow) {
                const std::int64_t at = ih * g.inW + ow * g.strideW + kw - g.padW;
                const float v = x[at];
                if (v > y[ow] || (v != v && y[ow] == y[ow])) {
                    y[ow] = v;
                    argmax[ow] = static_cast<float>(at);
                }
            }
        }
    }
}

#endif

void maxPoolPlane(const float* x, const PoolGeometry& g, const std::vector<ColumnRange>& columns, float* scratch,
                  float* y, float* argmax)
{
    for (std::int64_t oh = 0; oh < g.outH; ++oh) {
        std::int64_t h0, h1;
        rowRange(g, oh, h0, h1);
        maxPoolRow(x, g, columns, h0, h1, scratch, y + oh * g.outW, argmax + oh * g.outW);
    }
}

void avgPoolPlane(const float* x, const PoolGeometry& g, const std::vector<ColumnRange>& columns, float* y)
{
    for (std::int64_t oh = 0; oh < g.outH; ++oh) {
        float* sum = y + oh * g.outW;
        std::fill_n(sum, g.outW, 0.0f);
        std::int64_t h0, h1;
        rowRange(g, oh, h0, h1);
        for (std::int64_t ih = h0; ih < h1; ++ih) {
            const float* row = x + ih * g.inW;
            for (std::int64_t kw = 0; kw < g.kW; ++kw) {
                const auto [lo, hi] = columns[static_cast<std::size_t>(kw)];
                const std::int64_t offset = kw - g.padW;
                for (std::int64_t ow = lo; ow < hi; ++ow)
                    sum[ow] += row[ow * g.strideW + offset];
            }
        }
        for (std::int64_t ow = 0; ow < g.outW; ++ow)
            sum[ow] /= static_cast<float>(g.averageDivisor((h1 - h0) * columnsInside(g, ow)));
    }
}

void avgPoolBackwardPlane(const float* dy, const PoolGeometry& g, const std::vector<ColumnRange>& columns, float* share,
                          float* dx)
{
    std::fill_n(dx, g.inH * g.inW, 0.0f);
    for (std::int64_t oh = 0; oh < g.outH; ++oh) {
        std::int64_t h0, h1;
        rowRange(g, oh, h0, h1);
        for (std::int64_t ow = 0; ow < g.outW; ++ow)
            share[ow] = dy[oh * g.outW + ow] / static_cast<float>(g.averageDivisor((h1 - h0) * columnsInside(g, ow)));
        for (std::int64_t ih = h0; ih < h1; ++ih) {
            float* row = dx + ih * g.inW;
            for (std::int64_t kw = 0; kw < g.kW; ++kw) {
                const auto [lo, hi] = columns[static_cast<std::size_t>(kw)];
                const std::int64_t offset = kw - g.padW;
                for (std::int64_t ow = lo; ow < hi; ++ow)
                    row[ow * g.strideW + offset] += share[ow];
            }
        }
    }
}

// avgPoolBackwardPlane where the one window is [0, kH) x [0, kW) of the plane (global pooling):
// every input inside it receives its share once, added to the 0 it starts from (0 + share,
// the same bits, a -0 share included), the others stay 0. One pass over the plane instead of
// the general loop's walk of every window offset, which took eight times oneDNN's time for
// a 14x14 window.
void avgPoolBackwardSingleWindow(const float* dy, const PoolGeometry& g, float* dx)
{
    const float value = 0.0f + dy[0] / static_cast<float>(g.kH * g.kW);
    for (std::int64_t ih = 0; ih < g.inH; ++ih) {
        float* row = dx + ih * g.inW;
        const std::int64_t inside = ih < g.kH ? g.kW : 0;
        std::fill_n(row, inside, value);
        std::fill_n(row + inside, g.inW - inside, 0.0f);
    }
}

// f(p, in, out, scratch) for every plane p of the batch: `in` holds plane p of `input` (inSize
// values) as fp32, `out` takes plane p of `output` (outSize values) and is rounded into it
// afterwards, `scratch` is the thread's own `scratchSize` floats. A 16-bit plane is widened
// into, and rounded from, the thread's buffers (float_chunks.h) rather than whole-tensor fp32
// copies; fp32 planes are used in place.
template <typename F>
void forEachPlane(const Tensor& input, std::int64_t inSize, Tensor& output, std::int64_t outSize, std::int64_t planes,
                  std::int64_t scratchSize, F f)
{
#pragma omp parallel if (planes * std::max(inSize, outSize) > 65536)
    {
        std::vector<float> in(static_cast<std::size_t>(inSize)), out(static_cast<std::size_t>(outSize));
        std::vector<float> scratch(static_cast<std::size_t>(scratchSize));
#pragma omp for schedule(static)
        for (std::int64_t p = 0; p < planes; ++p) {
            const auto inAt = static_cast<std::size_t>(p * inSize), outAt = static_cast<std::size_t>(p * outSize);
            const float* values = cpu::floatsOf(input, inAt, static_cast<std::size_t>(inSize), in.data());
            float* results = cpu::floatSlot(output, outAt, out.data());
            f(p, values, results, scratch.data());
            cpu::storeFloats(output, outAt, static_cast<std::size_t>(outSize), results);
        }
    }
}

// Average pooling whose one window is [0, kH) x [0, kW) of each plane (global pooling, one
// output per plane). Each plane's sum is avgPoolPlane's, the same additions in the same
// row-major order, but 16 planes go at once: one plane's additions each wait for the previous
// (a chain as long as the window), 16 planes' are independent.
void avgPoolSinglePlaneWindows(const Tensor& x, Tensor& y, const PoolGeometry& g)
{
    constexpr std::int64_t kGroup = 16;
    const std::int64_t planes = g.n * g.channels, in = g.inH * g.inW;
    const std::int64_t groups = (planes + kGroup - 1) / kGroup;
    const auto divisor = static_cast<float>(g.kH * g.kW);
#pragma omp parallel if (planes * in > 65536)
    {
        std::vector<float> values(static_cast<std::size_t>(kGroup * in));
        alignas(64) float sums[kGroup], outScratch[kGroup];
#pragma omp for schedule(static)
        for (std::int64_t group = 0; group < groups; ++group) {
            const std::int64_t first = group * kGroup, count = std::min(kGroup, planes - first);
            const float* planeValues = cpu::floatsOf(x, static_cast<std::size_t>(first * in),
                                                     static_cast<std::size_t>(count * in), values.data());
            std::fill_n(sums, kGroup, 0.0f);
            for (std::int64_t ih = 0; ih < g.kH; ++ih)
                for (std::int64_t kw = 0; kw < g.kW; ++kw) {
                    const float* tap = planeValues + ih * g.inW + kw;
                    for (std::int64_t j = 0; j < count; ++j)
                        sums[j] += tap[j * in];
                }
            float* out = cpu::floatSlot(y, static_cast<std::size_t>(first), outScratch);
            for (std::int64_t j = 0; j < count; ++j)
                out[j] = sums[j] / divisor;
            cpu::storeFloats(y, static_cast<std::size_t>(first), static_cast<std::size_t>(count), out);
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
    const std::int64_t planes = g.n * g.channels, in = g.inH * g.inW, out = g.outH * g.outW;
    float* pa = argmax.f32();
    const auto columns = columnRanges(g);
    forEachPlane(x, in, y, out, planes, 2 * (g.outW + 8),
                 [&](std::int64_t p, const float* px, float* py, float* scratch) {
                     maxPoolPlane(px, g, columns, scratch, py, pa + p * out);
                 });
}

void CpuBackend::maxPoolBackward(const Tensor& dy, const Tensor& argmax, Tensor& dx, const PoolGeometry& g)
{
    checkGeometry(g, dx, dy);
    MANTISSA_ASSERT(argmax.dtype() == DType::F32 && argmax.numel() == dy.numel());
    const std::int64_t planes = g.n * g.channels, in = g.inH * g.inW, out = g.outH * g.outW;
    const float* pa = argmax.f32();
    forEachPlane(dy, out, dx, in, planes, 0, [&](std::int64_t p, const float* pdy, float* plane, float*) {
        std::fill_n(plane, in, 0.0f);
        // Overlapping windows (stride < kernel) may share a winner: gradients add.
        for (std::int64_t o = 0; o < out; ++o)
            plane[static_cast<std::int64_t>(pa[p * out + o])] += pdy[o];
    });
}

void CpuBackend::avgPoolForward(const Tensor& x, Tensor& y, const PoolGeometry& g)
{
    checkGeometry(g, x, y);
    if (g.oneWindowInside()) {
        avgPoolSinglePlaneWindows(x, y, g);
        return;
    }
    const std::int64_t planes = g.n * g.channels, in = g.inH * g.inW, out = g.outH * g.outW;
    const auto columns = columnRanges(g);
    forEachPlane(x, in, y, out, planes, 0,
                 [&](std::int64_t, const float* px, float* py, float*) { avgPoolPlane(px, g, columns, py); });
}

void CpuBackend::avgPoolBackward(const Tensor& dy, Tensor& dx, const PoolGeometry& g)
{
    checkGeometry(g, dx, dy);
    const std::int64_t planes = g.n * g.channels, in = g.inH * g.inW, out = g.outH * g.outW;
    if (g.oneWindowInside()) {
        forEachPlane(dy, out, dx, in, planes, 0, [&](std::int64_t, const float* pdy, float* pdx, float*) {
            avgPoolBackwardSingleWindow(pdy, g, pdx);
        });
        return;
    }
    const auto columns = columnRanges(g);
    forEachPlane(dy, out, dx, in, planes, g.outW, [&](std::int64_t, const float* pdy, float* pdx, float* share) {
        avgPoolBackwardPlane(pdy, g, columns, share, pdx);
    });
}

} // namespace mantissa
