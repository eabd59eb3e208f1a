// Layer norm and RMS norm over the last dimension. The statistics of each row are computed in
// fp32 (two passes: the mean, then the squared deviations from it) unless the layer asks for
// its compute dtype, which rounds every step of the same two passes to that type (backend.h).
// Normalising, the gain and the bias run in fp32 and y is rounded once.
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

// The gain's and bias's gradients sum over rows: per-column double sums, rows in order, so
// that the result does not depend on the thread count. The threads split the columns (each
// reads and widens only its slice of every row), which keeps that order and runs in parallel.
void parameterGradientSums(const Tensor& x, const Tensor& dy, const float* means, const float* invStds,
                           std::int64_t rows, std::int64_t width, double* gainSum, double* biasSum)
{
#pragma omp parallel if (rows * width > 65536)
    {
        const std::int64_t threads = omp_get_num_threads(), thread = omp_get_thread_num();
        const std::int64_t begin = width * thread / threads, end = width * (thread + 1) / threads;
        const auto slice = static_cast<std::size_t>(end - begin);
        std::vector<float> xScratch(slice), dyScratch(slice);
        for (std::int64_t r = 0; r < rows && slice > 0; ++r) {
            const auto offset = static_cast<std::size_t>(r * width + begin);
            const float* row = cpu::floatsOf(x, offset, slice, xScratch.data());
            const float* grad = cpu::floatsOf(dy, offset, slice, dyScratch.data());
            for (std::size_t c = 0; c < slice; ++c) {
                gainSum[begin + c] += static_cast<double>(grad[c]) * ((row[c] - means[r]) * invStds[r]);
                biasSum[begin + c] += grad[c];
            }
        }
    }
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
                                for (std::int64_t i = 0; i < count; ++i) {
                                    const float* row = in[0] + i * width;
                                    const float* grad = in[1] + i * width;
                                    const float mu = means[first + i], inv = invStds[first + i];
                                    double sumDxhat = 0, sumDxhatXhat = 0;
                                    for (std::int64_t c = 0; c < width; ++c) {
                                        const double dxhat = static_cast<double>(grad[c]) * gamma[c];
                                        sumDxhat += dxhat;
                                        sumDxhatXhat += dxhat * ((row[c] - mu) * inv);
                                    }
                                    const auto n = static_cast<double>(width);
                                    const double meanDxhat = kind == RowNormKind::LayerNorm ? sumDxhat / n : 0.0;
                                    const double meanDxhatXhat = sumDxhatXhat / n;
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
