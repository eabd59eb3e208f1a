// Layer norm and RMS norm over the last dimension. The statistics of each row are computed in
// fp32 (two passes: the mean, then the squared deviations from it) unless the layer asks for
// its compute dtype, which rounds every step of the same two passes to that type (backend.h).
// Normalising, the gain and the bias run in fp32 and y is rounded once.
#include "engine/backend/cpu/bf16_bits.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/reductions.h"
#include "engine/backend/cpu/row_chunks.h"
#include "engine/numerics/conversions.h"
#include "engine/util/check.h"

#include <cmath>
#include <omp.h>
#include <vector>

namespace mantissa {

namespace {

struct RowStatistics {
    float mean = 0, invStd = 0;
};

RowStatistics fp32Statistics(RowNormKind kind, const float* row, std::int64_t width, float epsilon)
{
    const auto n = static_cast<double>(width);
    if (kind == RowNormKind::RmsNorm) {
        const double meanSquare = cpu::sumSquaredDeviations(row, width, 0.0f) / n;
        return {0.0f, static_cast<float>(1.0 / std::sqrt(meanSquare + epsilon))};
    }
    const auto mean = static_cast<float>(cpu::sumFloats(row, width) / n);
    const double variance = cpu::sumSquaredDeviations(row, width, mean) / n;
    return {mean, static_cast<float>(1.0 / std::sqrt(variance + epsilon))};
}

// The same passes with every intermediate rounded to `type`, accumulating left to right as a
// naive per-row kernel does: a sum of squares past the type's largest value becomes inf, and
// a running sum stops taking in terms smaller than half its ulp.
RowStatistics roundedStatistics(RowNormKind kind, const float* row, std::int64_t width, float epsilon, DType type)
{
    auto r = [type](float v) { return roundToDType(v, type); };
    const float n = r(static_cast<float>(width));
    float mean = 0;
    if (kind == RowNormKind::LayerNorm) {
        float sum = 0;
        for (std::int64_t i = 0; i < width; ++i)
            sum = r(sum + row[i]);
        mean = r(sum / n);
    }
    float squares = 0;
    for (std::int64_t i = 0; i < width; ++i) {
        const float d = r(row[i] - mean);
        squares = r(squares + r(d * d));
    }
    const float variance = r(squares / n);
    return {mean, r(1.0f / r(std::sqrt(r(variance + r(epsilon)))))};
}

// Adds rows [0, rows) of a slice of columns into the per-column sums of the gain's and bias's
// gradients, rows in order. `x` and `dy` point at the slice's first column in row 0; rows lie
// `stride` words apart.
template <typename Word>
void columnGradientSums(const Word* x, const Word* dy, std::int64_t stride, const float* means, const float* invStds,
                        std::int64_t rows, std::int64_t slice, double* gainSum, double* biasSum)
{
    for (std::int64_t r = 0; r < rows; ++r) {
        const Word* row = x + r * stride;
        const Word* grad = dy + r * stride;
        const float mean = means[r], invStd = invStds[r];
        for (std::int64_t c = 0; c < slice; ++c) {
            const float g = cpu::widened(grad[c]);
            gainSum[c] += static_cast<double>(g) * ((cpu::widened(row[c]) - mean) * invStd);
            biasSum[c] += g;
        }
    }
}

// The gain's and bias's gradients sum over rows: per-column double sums, rows in order, so
// that the result does not depend on the thread count. The threads split the columns, which
// keeps that order and runs in parallel. Each reads its slice of every row where it lies:
// fp32 in place and bf16 bits widened as they are read (bf16_bits.h), the values a widened
// copy would hold, without a call per row to widen them; other 16-bit types are widened a
// slice of a row at a time.
void parameterGradientSums(const Tensor& x, const Tensor& dy, const float* means, const float* invStds,
                           std::int64_t rows, std::int64_t width, double* gainSum, double* biasSum)
{
    const bool inPlace = x.dtype() == dy.dtype() && (x.dtype() == DType::F32 || x.dtype() == DType::BF16);
#pragma omp parallel if (rows * width > 65536)
    {
        const std::int64_t threads = omp_get_num_threads(), thread = omp_get_thread_num();
        const std::int64_t begin = width * thread / threads, end = width * (thread + 1) / threads;
        const std::int64_t slice = end - begin;
        double* gains = gainSum + begin;
        double* biases = biasSum + begin;
        if (inPlace && x.dtype() == DType::F32) {
            columnGradientSums(x.f32() + begin, dy.f32() + begin, width, means, invStds, rows, slice, gains, biases);
        } else if (inPlace) {
            const auto* xb = reinterpret_cast<const cpu::Bf16Bits*>(x.u16()) + begin;
            const auto* dyb = reinterpret_cast<const cpu::Bf16Bits*>(dy.u16()) + begin;
            columnGradientSums(xb, dyb, width, means, invStds, rows, slice, gains, biases);
        } else {
            std::vector<float> xScratch(static_cast<std::size_t>(slice)), dyScratch(static_cast<std::size_t>(slice));
            for (std::int64_t r = 0; r < rows && slice > 0; ++r) {
                const auto offset = static_cast<std::size_t>(r * width + begin);
                const float* row = cpu::floatsOf(x, offset, static_cast<std::size_t>(slice), xScratch.data());
                const float* grad = cpu::floatsOf(dy, offset, static_cast<std::size_t>(slice), dyScratch.data());
                columnGradientSums(row, grad, width, means + r, invStds + r, 1, slice, gains, biases);
            }
        }
    }
}

// The two sums of each row's input gradient (of dxhat and of dxhat * xhat), each in double.
// The columns are summed in SIMD lanes (omp simd's reduction: each lane sums every
// lane-count-th column in order, then the lanes are added), an order fixed by the build, not by
// the thread count or the data, so the sums have the same bits on every run.
struct RowSums {
    double dxhat = 0, dxhatXhat = 0;
};

RowSums rowGradientSums(const float* x, const float* dy, const float* gamma, float mean, float invStd,
                        std::int64_t width)
{
    double sumDxhat = 0, sumDxhatXhat = 0;
#pragma omp simd reduction(+ : sumDxhat, sumDxhatXhat)
    for (std::int64_t c = 0; c < width; ++c) {
        const double dxhat = static_cast<double>(dy[c]) * gamma[c];
        sumDxhat += dxhat;
        sumDxhatXhat += dxhat * ((x[c] - mean) * invStd);
    }
    return {sumDxhat, sumDxhatXhat};
}

} // namespace

void CpuBackend::rowNormForward(RowNormKind kind, const Tensor& x, const Tensor& gain, const Tensor* bias, Tensor& y,
                                Tensor& mean, Tensor& invStd, float epsilon, DType statistics)
{
    const std::int64_t width = gain.numel();
    const std::int64_t rows = x.numel() / width;
    MANTISSA_ASSERT(rows * width == x.numel() && y.numel() == x.numel());
    MANTISSA_ASSERT(gain.dtype() == DType::F32 && (!bias || (bias->dtype() == DType::F32 && bias->numel() == width)));
    MANTISSA_ASSERT(mean.dtype() == DType::F32 && invStd.dtype() == DType::F32);
    MANTISSA_ASSERT(mean.numel() == rows && invStd.numel() == rows);
    const float* g = gain.f32();
    const float* b = bias ? bias->f32() : nullptr;
    float* means = mean.f32();
    float* invStds = invStd.f32();
    cpu::forRowBlocks<1, 1>(rows, width, cpu::rowsPerBlock(width), {&x}, {&y}, true,
                            [&](auto in, auto out, std::int64_t first, std::int64_t count) {
                                for (std::int64_t i = 0; i < count; ++i) {
                                    const float* row = in[0] + i * width;
                                    const RowStatistics s =
                                        statistics == DType::F32
                                            ? fp32Statistics(kind, row, width, epsilon)
                                            : roundedStatistics(kind, row, width, epsilon, statistics);
                                    means[first + i] = s.mean;
                                    invStds[first + i] = s.invStd;
                                    float* o = out[0] + i * width;
                                    for (std::int64_t c = 0; c < width; ++c)
                                        o[c] = (row[c] - s.mean) * s.invStd * g[c] + (b ? b[c] : 0.0f);
                                }
                            });
}

// With xhat = (x - mean) * invStd and dxhat = dy * gain:
//   layer norm: dx = invStd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
//   RMS norm:   dx = invStd * (dxhat - xhat * mean(dxhat * xhat))   (the mean is not subtracted)
void CpuBackend::rowNormBackward(RowNormKind kind, const Tensor& x, const Tensor& dy, const Tensor& gain,
                                 const Tensor& mean, const Tensor& invStd, Tensor& dx, Tensor& dgain, Tensor* dbias)
{
    const std::int64_t width = gain.numel();
    const std::int64_t rows = x.numel() / width;
    MANTISSA_ASSERT(dy.numel() == x.numel() && dx.numel() == x.numel() && dgain.numel() == width);
    MANTISSA_ASSERT(dgain.dtype() == DType::F32 && (!dbias || dbias->dtype() == DType::F32));
    const float* gamma = gain.f32();
    const float* means = mean.f32();
    const float* invStds = invStd.f32();
    std::vector<double> gainSum(static_cast<std::size_t>(width), 0.0), biasSum(static_cast<std::size_t>(width), 0.0);
    parameterGradientSums(x, dy, means, invStds, rows, width, gainSum.data(), biasSum.data());
    for (std::int64_t c = 0; c < width; ++c) {
        dgain.f32()[c] = static_cast<float>(gainSum[c]);
        if (dbias)
            dbias->f32()[c] = static_cast<float>(biasSum[c]);
    }
    cpu::forRowBlocks<2, 1>(rows, width, cpu::rowsPerBlock(width), {&x, &dy}, {&dx}, true,
                            [&](auto in, auto out, std::int64_t first, std::int64_t count) {
                                const auto n = static_cast<double>(width);
                                for (std::int64_t i = 0; i < count; ++i) {
                                    const float* row = in[0] + i * width;
                                    const float* grad = in[1] + i * width;
                                    const float mu = means[first + i], inv = invStds[first + i];
                                    const RowSums sums = rowGradientSums(row, grad, gamma, mu, inv, width);
                                    const double meanDxhat = kind == RowNormKind::LayerNorm ? sums.dxhat / n : 0.0;
                                    const double meanDxhatXhat = sums.dxhatXhat / n;
                                    float* o = out[0] + i * width;
                                    for (std::int64_t c = 0; c < width; ++c) {
                                        const double xhat = (row[c] - mu) * inv;
                                        o[c] = static_cast<float>(inv * (static_cast<double>(grad[c]) * gamma[c] -
                                                                         meanDxhat - xhat * meanDxhatXhat));
                                    }
                                }
                            });
}

} // namespace mantissa
