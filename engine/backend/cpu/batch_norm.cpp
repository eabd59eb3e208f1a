// Batch normalisation over [N, C] or [N, C, H, W]. Whatever x's dtype, the statistics are
// fp32 values accumulated in fp32 lanes and double (reductions.h), with a two-pass variance:
// an fp16 sum of 100k activations overflows or loses every small difference, and
// E[x^2] - E[x]^2 cancels catastrophically when the mean is large against the spread.
// Running statistics follow PyTorch: running = (1 - momentum) * running + momentum * batch,
// with the unbiased batch variance for the running variance. With BatchNormState::acrossRanks
// (synchronised batch norm) the same passes run over the global batch, their sums added across
// the ranks between passes (docs/distributed.md).
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_view.h"
#include "engine/backend/cpu/reductions.h"
#include "engine/util/check.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace mantissa {

namespace {

// x viewed as [n, channels, spatial]; spatial is 1 for [N, C].
struct Layout {
    std::int64_t n = 0, channels = 0, spatial = 0;
    double count() const { return static_cast<double>(n * spatial); }
    std::int64_t offset(std::int64_t sample, std::int64_t c) const { return (sample * channels + c) * spatial; }
};

Layout layoutOf(const Tensor& x)
{
    MANTISSA_ASSERT(x.shape().rank() == 2 || x.shape().rank() == 4);
    Layout l{x.shape()[0], x.shape()[1], 0};
    l.spatial = x.numel() / (l.n * l.channels);
    return l;
}

// --- kernels --------------------------------------------------------------------------------

// Per-channel sum of x: the first pass of the statistics.
void channelSums(const float* x, const Layout& l, std::vector<double>& sum)
{
    const auto channels = static_cast<std::size_t>(l.channels);
    sum.assign(channels, 0.0);
    if (l.spatial == 1) {
        // [N, C]: a channel is strided, so accumulate whole rows (vectorised across channels).
        for (std::int64_t i = 0; i < l.n; ++i)
            for (std::size_t c = 0; c < channels; ++c)
                sum[c] += x[static_cast<std::size_t>(i) * channels + c];
        return;
    }
#pragma omp parallel for schedule(static) if (l.n * l.channels * l.spatial > 65536)
    for (std::int64_t c = 0; c < l.channels; ++c) {
        double total = 0;
        for (std::int64_t i = 0; i < l.n; ++i)
            total += cpu::sumFloats(x + l.offset(i, c), l.spatial);
        sum[static_cast<std::size_t>(c)] = total;
    }
}

// Per-channel sum of (x - mean)^2: the second pass, about a mean already known.
void centredSquares(const float* x, const Layout& l, const std::vector<double>& mean, std::vector<double>& squares)
{
    const auto channels = static_cast<std::size_t>(l.channels);
    squares.assign(channels, 0.0);
    if (l.spatial == 1) {
        for (std::int64_t i = 0; i < l.n; ++i) {
            for (std::size_t c = 0; c < channels; ++c) {
                const double d = x[static_cast<std::size_t>(i) * channels + c] - mean[c];
                squares[c] += d * d;
            }
        }
        return;
    }
#pragma omp parallel for schedule(static) if (l.n * l.channels * l.spatial > 65536)
    for (std::int64_t c = 0; c < l.channels; ++c) {
        const auto m = static_cast<float>(mean[static_cast<std::size_t>(c)]);
        double total = 0;
        for (std::int64_t i = 0; i < l.n; ++i)
            total += cpu::sumSquaredDeviations(x + l.offset(i, c), l.spatial, m);
        squares[static_cast<std::size_t>(c)] = total;
    }
}

// `sums` (and the element count after them) added across the ranks through fp32: the partial
// sums are rounded once to fp32 for the all-reduce, which is 2^-24 relative per rank, far below
// the statistics' own sampling noise. Returns the global count.
double sumAcrossRanks(CrossRankSum& ranks, std::vector<double>& sums, double count, std::vector<float>& buffer)
{
    buffer.resize(sums.size() + 1);
    std::copy(sums.begin(), sums.end(), buffer.begin());
    buffer.back() = static_cast<float>(count);
    ranks.sum(buffer);
    std::copy(buffer.begin(), buffer.end() - 1, sums.begin());
    return buffer.back();
}

// Per-channel mean and biased variance over the batch, two passes: the mean first, then the
// squared deviations from it. With `ranks` the batch is the global one: each pass's sums are
// added across the ranks before they are used, so the deviations are taken about the global
// mean. That keeps the single-process method (no E[x^2] - E[x]^2 cancellation) at the price of
// two all-reduces of C floats (+ the count) instead of one. Returns the element count.
double channelStatistics(const float* x, const Layout& l, CrossRankSum* ranks, std::vector<double>& mean,
                         std::vector<double>& var)
{
    std::vector<float> buffer;
    double count = l.count();
    channelSums(x, l, mean);
    if (ranks)
        count = sumAcrossRanks(*ranks, mean, count, buffer);
    for (double& m : mean)
        m /= count;
    centredSquares(x, l, mean, var);
    if (ranks)
        sumAcrossRanks(*ranks, var, l.count(), buffer);
    for (double& v : var)
        v /= count;
    return count;
}

// y = (x - mean[c]) * scale[c] + shift[c]. Subtracting first keeps the result exact to fp32
// when the mean is large, where x * scale + (shift - mean * scale) would cancel.
void normalise(const float* x, const Layout& l, const std::vector<float>& mean, const std::vector<float>& scale,
               const std::vector<float>& shift, float* y)
{
    const std::int64_t planes = l.n * l.channels;
#pragma omp parallel for schedule(static) if (planes * l.spatial > 65536)
    for (std::int64_t plane = 0; plane < planes; ++plane) {
        const auto c = static_cast<std::size_t>(plane % l.channels);
        const float m = mean[c], a = scale[c], b = shift[c];
        const float* in = x + plane * l.spatial;
        float* out = y + plane * l.spatial;
        for (std::int64_t i = 0; i < l.spatial; ++i)
            out[i] = (in[i] - m) * a + b;
    }
}

// Per-channel sum(dy) and sum(dy * (x - mean)).
void gradientSums(const float* dy, const float* x, const Layout& l, const float* mean, std::vector<double>& sumDy,
                  std::vector<double>& sumDyXmu)
{
    const auto channels = static_cast<std::size_t>(l.channels);
    sumDy.assign(channels, 0.0);
    sumDyXmu.assign(channels, 0.0);
    if (l.spatial == 1) {
        for (std::int64_t i = 0; i < l.n; ++i) {
            for (std::size_t c = 0; c < channels; ++c) {
                const std::size_t at = static_cast<std::size_t>(i) * channels + c;
                sumDy[c] += dy[at];
                sumDyXmu[c] += static_cast<double>(dy[at]) * (x[at] - mean[c]);
            }
        }
        return;
    }
#pragma omp parallel for schedule(static) if (l.n * l.channels * l.spatial > 65536)
    for (std::int64_t c = 0; c < l.channels; ++c) {
        double s = 0, sx = 0;
        for (std::int64_t i = 0; i < l.n; ++i) {
            s += cpu::sumFloats(dy + l.offset(i, c), l.spatial);
            sx += cpu::dotDeviations(dy + l.offset(i, c), x + l.offset(i, c), l.spatial, mean[c]);
        }
        sumDy[static_cast<std::size_t>(c)] = s;
        sumDyXmu[static_cast<std::size_t>(c)] = sx;
    }
}

void checkParameters(const Tensor& gamma, const Tensor& other, const Layout& l)
{
    MANTISSA_ASSERT(gamma.dtype() == DType::F32 && other.dtype() == DType::F32);
    MANTISSA_ASSERT(gamma.numel() == l.channels && other.numel() == l.channels);
}

} // namespace

// --- public ops -------------------------------------------------------------------------------

void CpuBackend::batchNormForward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                                  BatchNormState& state, bool training, float momentum, float epsilon)
{
    const Layout l = layoutOf(x);
    checkParameters(gamma, beta, l);
    MANTISSA_ASSERT(y.numel() == x.numel());
    MANTISSA_ASSERT(state.runningMean.dtype() == DType::F32 && state.runningVar.dtype() == DType::F32);
    MANTISSA_ASSERT(state.runningMean.numel() == l.channels && state.runningVar.numel() == l.channels);
    cpu::FloatInput fx(x);
    const auto channels = static_cast<std::size_t>(l.channels);
    std::vector<float> mean(channels), invStd(channels);
    float* runningMean = state.runningMean.f32();
    float* runningVar = state.runningVar.f32();
    if (training) {
        MANTISSA_ASSERT(state.savedMean.dtype() == DType::F32 && state.savedMean.numel() == l.channels);
        MANTISSA_ASSERT(state.savedInvStd.dtype() == DType::F32 && state.savedInvStd.numel() == l.channels);
        std::vector<double> batchMean, batchVar;
        const double count = channelStatistics(fx.data(), l, state.acrossRanks, batchMean, batchVar);
        const double unbias = count > 1 ? count / (count - 1) : 1.0;
        for (std::size_t c = 0; c < channels; ++c) {
            mean[c] = static_cast<float>(batchMean[c]);
            invStd[c] = static_cast<float>(1.0 / std::sqrt(batchVar[c] + epsilon));
            state.savedMean.f32()[c] = mean[c];
            state.savedInvStd.f32()[c] = invStd[c];
            runningMean[c] = static_cast<float>((1.0 - momentum) * runningMean[c] + momentum * batchMean[c]);
            runningVar[c] = static_cast<float>((1.0 - momentum) * runningVar[c] + momentum * batchVar[c] * unbias);
        }
    } else {
        for (std::size_t c = 0; c < channels; ++c) {
            mean[c] = runningMean[c];
            invStd[c] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(runningVar[c]) + epsilon));
        }
    }
    std::vector<float> scale(channels);
    for (std::size_t c = 0; c < channels; ++c)
        scale[c] = gamma.f32()[c] * invStd[c];
    const std::vector<float> shift(beta.f32(), beta.f32() + l.channels);
    cpu::FloatOutput fy(y);
    normalise(fx.data(), l, mean, scale, shift, fy.data());
    fy.commit();
}

void CpuBackend::batchNormBackward(const Tensor& x, const Tensor& dy, const Tensor& gamma, const BatchNormState& state,
                                   Tensor& dx, Tensor& dgamma, Tensor& dbeta)
{
    const Layout l = layoutOf(x);
    checkParameters(gamma, dgamma, l);
    checkParameters(dbeta, state.savedMean, l);
    checkParameters(state.savedInvStd, state.savedInvStd, l);
    MANTISSA_ASSERT(dy.numel() == x.numel() && dx.numel() == x.numel());
    cpu::FloatInput fx(x);
    cpu::FloatInput fdy(dy);
    const float* mean = state.savedMean.f32();
    const float* invStd = state.savedInvStd.f32();
    std::vector<double> sumDy, sumDyXmu;
    gradientSums(fdy.data(), fx.data(), l, mean, sumDy, sumDyXmu);
    const auto channels = static_cast<std::size_t>(l.channels);
    // The parameter gradients are this rank's own: the trainer averages them across ranks
    // with every other gradient.
    for (std::size_t c = 0; c < channels; ++c) {
        dbeta.f32()[c] = static_cast<float>(sumDy[c]);
        dgamma.f32()[c] = static_cast<float>(sumDyXmu[c] * invStd[c]);
    }
    double count = l.count();
    if (state.acrossRanks) {
        // The input gradient is the global batch's: its mean and variance depend on every
        // rank's values, so dx needs the global sum(dy) and sum(dy * (x - mean)), one all-reduce.
        sumDy.insert(sumDy.end(), sumDyXmu.begin(), sumDyXmu.end());
        std::vector<float> buffer;
        count = sumAcrossRanks(*state.acrossRanks, sumDy, count, buffer);
        std::copy(sumDy.begin() + l.channels, sumDy.end(), sumDyXmu.begin());
        sumDy.resize(channels);
    }
    // dx = gamma * invStd * (dy - sum(dy) / M - xhat * sum(dy * xhat) / M), xhat = (x - mean) * invStd,
    // written as dx = dy * a + (x - mean) * b + shift per channel.
    std::vector<float> a(channels), b(channels), shift(channels);
    for (std::size_t c = 0; c < channels; ++c) {
        const double g = gamma.f32()[c], s = invStd[c];
        const double k = g * s;
        const double xCoefficient = -k * s * s * sumDyXmu[c] / count;
        a[c] = static_cast<float>(k);
        b[c] = static_cast<float>(xCoefficient);
        shift[c] = static_cast<float>(-k * sumDy[c] / count);
    }
    cpu::FloatOutput fdx(dx);
    const float* pdy = fdy.data();
    const float* px = fx.data();
    float* out = fdx.data();
    const std::int64_t planes = l.n * l.channels;
#pragma omp parallel for schedule(static) if (planes * l.spatial > 65536)
    for (std::int64_t plane = 0; plane < planes; ++plane) {
        const auto c = static_cast<std::size_t>(plane % l.channels);
        const std::int64_t base = plane * l.spatial;
        const float m = mean[c];
        for (std::int64_t i = 0; i < l.spatial; ++i)
            out[base + i] = pdy[base + i] * a[c] + (px[base + i] - m) * b[c] + shift[c];
    }
    fdx.commit();
}

} // namespace mantissa
