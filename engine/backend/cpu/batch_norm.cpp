// Batch normalisation over [N, C] or [N, C, H, W]. Whatever x's dtype, the statistics are
// fp32 values accumulated in fp32 lanes and double (reductions.h), with a two-pass variance:
// an fp16 sum of 100k activations overflows or loses every small difference, and
// E[x^2] - E[x]^2 cancels catastrophically when the mean is large against the spread.
// Running statistics follow PyTorch: running = (1 - momentum) * running + momentum * batch,
// with the unbiased batch variance for the running variance. With BatchNormState::acrossRanks
// (synchronised batch norm) the same passes run over the global batch, their sums added across
// the ranks between passes (docs/distributed.md).
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_chunks.h"
#include "engine/backend/cpu/float_view.h"
#include "engine/backend/cpu/reductions.h"
#include "engine/util/check.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <tuple>
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
//
// The kernels read x and dy in their storage type. An [N, C] tensor (a channel is strided) is
// widened whole; an [N, C, H, W] one plane by plane, a reductions.h block at a time, and each
// sum goes on from the previous block's (`carried`), so the statistics have the bits of a sum
// over the whole fp32 plane without a whole-tensor fp32 copy (whose memory traffic cost more
// than the arithmetic on bf16 networks). bf16 blocks are read where they lie (reductions.h
// widens each value exactly as it sums); fp16 ones are widened into a buffer on the stack.

// A tensor the kernels read: `whole` when it is fp32 or widened whole; `bf16` when its bf16
// bits are read where they lie; else widened a block at a time.
struct Source {
    const Tensor& tensor;
    const float* whole = nullptr;
    const cpu::Bf16Bits* bf16 = nullptr;
};

Source sourceOf(const Tensor& t, const Layout& l, std::optional<cpu::FloatInput>& widened)
{
    if (t.dtype() == DType::F32)
        return {t, t.f32()};
    if (l.spatial == 1)
        return {t, widened.emplace(t).data()};
    if (t.dtype() == DType::BF16)
        return {t, nullptr, reinterpret_cast<const cpu::Bf16Bits*>(t.u16())};
    return {t};
}

// f(first, values..., count) over elements [offset, offset + n) of the sources, one block at a
// time: each source's block as bf16 bits where every source is bf16, else as fp32.
template <typename F, typename... Sources>
void forBlocks(std::int64_t offset, std::int64_t n, F f, const Sources&... sources)
{
    constexpr std::int64_t kBlock = cpu::kSumBlock;
    if ((... && (sources.bf16 != nullptr))) {
        for (std::int64_t first = 0; first < n; first += kBlock)
            f(first, (sources.bf16 + offset + first)..., std::min(kBlock, n - first));
        return;
    }
    alignas(64) float scratch[sizeof...(Sources)][kBlock];
    for (std::int64_t first = 0; first < n; first += kBlock) {
        const std::int64_t count = std::min(kBlock, n - first);
        std::size_t k = 0;
        const auto values = [&](const Source& s) {
            float* buffer = scratch[k++];
            const auto at = static_cast<std::size_t>(offset + first);
            return s.whole ? s.whole + at : cpu::floatsOf(s.tensor, at, static_cast<std::size_t>(count), buffer);
        };
        // A braced list evaluates its elements in order, so each source gets its own buffer.
        const std::array<const float*, sizeof...(Sources)> blocks{values(sources)...};
        std::apply([&](auto... block) { f(first, block..., count); }, blocks);
    }
}

// Per-channel sum of x: the first pass of the statistics.
void channelSums(const Source& x, const Layout& l, std::vector<double>& sum)
{
    const auto channels = static_cast<std::size_t>(l.channels);
    sum.assign(channels, 0.0);
    if (l.spatial == 1) {
        // [N, C]: a channel is strided, so accumulate whole rows (vectorised across channels).
        for (std::int64_t i = 0; i < l.n; ++i)
            for (std::size_t c = 0; c < channels; ++c)
                sum[c] += x.whole[static_cast<std::size_t>(i) * channels + c];
        return;
    }
#pragma omp parallel for schedule(static) if (l.n * l.channels * l.spatial > 65536)
    for (std::int64_t c = 0; c < l.channels; ++c) {
        double total = 0;
        for (std::int64_t i = 0; i < l.n; ++i) {
            double plane = 0;
            forBlocks(
                l.offset(i, c), l.spatial,
                [&](std::int64_t, const auto* v, std::int64_t n) { plane = cpu::sumFloats(v, n, plane); }, x);
            total += plane;
        }
        sum[static_cast<std::size_t>(c)] = total;
    }
}

// Per-channel sum of (x - mean)^2: the second pass, about a mean already known.
void centredSquares(const Source& x, const Layout& l, const std::vector<double>& mean, std::vector<double>& squares)
{
    const auto channels = static_cast<std::size_t>(l.channels);
    squares.assign(channels, 0.0);
    if (l.spatial == 1) {
        for (std::int64_t i = 0; i < l.n; ++i) {
            for (std::size_t c = 0; c < channels; ++c) {
                const double d = x.whole[static_cast<std::size_t>(i) * channels + c] - mean[c];
                squares[c] += d * d;
            }
        }
        return;
    }
#pragma omp parallel for schedule(static) if (l.n * l.channels * l.spatial > 65536)
    for (std::int64_t c = 0; c < l.channels; ++c) {
        const auto m = static_cast<float>(mean[static_cast<std::size_t>(c)]);
        double total = 0;
        for (std::int64_t i = 0; i < l.n; ++i) {
            double plane = 0;
            forBlocks(
                l.offset(i, c), l.spatial,
                [&](std::int64_t, const auto* v, std::int64_t n) { plane = cpu::sumSquaredDeviations(v, n, m, plane); },
                x);
            total += plane;
        }
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
double channelStatistics(const Source& x, const Layout& l, CrossRankSum* ranks, std::vector<double>& mean,
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
void normalise(const Source& x, const Layout& l, const std::vector<float>& mean, const std::vector<float>& scale,
               const std::vector<float>& shift, Tensor& y)
{
    const std::int64_t planes = l.n * l.channels;
    if (l.spatial == 1) { // [N, C]: x is whole, and so is y's fp32 buffer
        cpu::FloatOutput fy(y);
        float* out = fy.data();
#pragma omp parallel for schedule(static) if (planes > 65536)
        for (std::int64_t i = 0; i < planes; ++i) {
            const auto c = static_cast<std::size_t>(i % l.channels);
            out[i] = (x.whole[i] - mean[c]) * scale[c] + shift[c];
        }
        fy.commit();
        return;
    }
#pragma omp parallel for schedule(static) if (planes * l.spatial > 65536)
    for (std::int64_t plane = 0; plane < planes; ++plane) {
        const auto c = static_cast<std::size_t>(plane % l.channels);
        const float m = mean[c], a = scale[c], b = shift[c];
        alignas(64) float slot[cpu::kSumBlock];
        forBlocks(
            plane * l.spatial, l.spatial,
            [&](std::int64_t first, const auto* in, std::int64_t n) {
                const auto at = static_cast<std::size_t>(plane * l.spatial + first);
                float* out = cpu::floatSlot(y, at, slot);
                for (std::int64_t i = 0; i < n; ++i)
                    out[i] = (cpu::widened(in[i]) - m) * a + b;
                cpu::storeFloats(y, at, static_cast<std::size_t>(n), out);
            },
            x);
    }
}

// Per-channel sum(dy) and sum(dy * (x - mean)).
void gradientSums(const Source& dy, const Source& x, const Layout& l, const float* mean, std::vector<double>& sumDy,
                  std::vector<double>& sumDyXmu)
{
    const auto channels = static_cast<std::size_t>(l.channels);
    sumDy.assign(channels, 0.0);
    sumDyXmu.assign(channels, 0.0);
    if (l.spatial == 1) {
        for (std::int64_t i = 0; i < l.n; ++i) {
            for (std::size_t c = 0; c < channels; ++c) {
                const std::size_t at = static_cast<std::size_t>(i) * channels + c;
                sumDy[c] += dy.whole[at];
                sumDyXmu[c] += static_cast<double>(dy.whole[at]) * (x.whole[at] - mean[c]);
            }
        }
        return;
    }
#pragma omp parallel for schedule(static) if (l.n * l.channels * l.spatial > 65536)
    for (std::int64_t c = 0; c < l.channels; ++c) {
        double s = 0, sx = 0;
        for (std::int64_t i = 0; i < l.n; ++i) {
            double planeDy = 0, planeDyXmu = 0;
            forBlocks(
                l.offset(i, c), l.spatial,
                [&](std::int64_t, const auto* g, const auto* v, std::int64_t n) {
                    planeDy = cpu::sumFloats(g, n, planeDy);
                    planeDyXmu = cpu::dotDeviations(g, v, n, mean[c], planeDyXmu);
                },
                dy, x);
            s += planeDy;
            sx += planeDyXmu;
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
    std::optional<cpu::FloatInput> widenedX;
    const Source sx = sourceOf(x, l, widenedX);
    const auto channels = static_cast<std::size_t>(l.channels);
    std::vector<float> mean(channels), invStd(channels);
    float* runningMean = state.runningMean.f32();
    float* runningVar = state.runningVar.f32();
    if (training) {
        MANTISSA_ASSERT(state.savedMean.dtype() == DType::F32 && state.savedMean.numel() == l.channels);
        MANTISSA_ASSERT(state.savedInvStd.dtype() == DType::F32 && state.savedInvStd.numel() == l.channels);
        std::vector<double> batchMean, batchVar;
        const double count = channelStatistics(sx, l, state.acrossRanks, batchMean, batchVar);
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
    normalise(sx, l, mean, scale, shift, y);
}

void CpuBackend::batchNormBackward(const Tensor& x, const Tensor& dy, const Tensor& gamma, const BatchNormState& state,
                                   Tensor& dx, Tensor& dgamma, Tensor& dbeta)
{
    const Layout l = layoutOf(x);
    checkParameters(gamma, dgamma, l);
    checkParameters(dbeta, state.savedMean, l);
    checkParameters(state.savedInvStd, state.savedInvStd, l);
    MANTISSA_ASSERT(dy.numel() == x.numel() && dx.numel() == x.numel());
    std::optional<cpu::FloatInput> widenedX, widenedDy;
    const Source sx = sourceOf(x, l, widenedX), sdy = sourceOf(dy, l, widenedDy);
    const float* mean = state.savedMean.f32();
    const float* invStd = state.savedInvStd.f32();
    std::vector<double> sumDy, sumDyXmu;
    gradientSums(sdy, sx, l, mean, sumDy, sumDyXmu);
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
    const std::int64_t planes = l.n * l.channels;
    if (l.spatial == 1) { // [N, C]: x and dy are whole, and so is dx's fp32 buffer
        cpu::FloatOutput fdx(dx);
        float* out = fdx.data();
#pragma omp parallel for schedule(static) if (planes > 65536)
        for (std::int64_t i = 0; i < planes; ++i) {
            const auto c = static_cast<std::size_t>(i % l.channels);
            out[i] = sdy.whole[i] * a[c] + (sx.whole[i] - mean[c]) * b[c] + shift[c];
        }
        fdx.commit();
        return;
    }
#pragma omp parallel for schedule(static) if (planes * l.spatial > 65536)
    for (std::int64_t plane = 0; plane < planes; ++plane) {
        const auto c = static_cast<std::size_t>(plane % l.channels);
        const float m = mean[c];
        alignas(64) float slot[cpu::kSumBlock];
        forBlocks(
            plane * l.spatial, l.spatial,
            [&](std::int64_t first, const auto* g, const auto* v, std::int64_t n) {
                const auto at = static_cast<std::size_t>(plane * l.spatial + first);
                float* out = cpu::floatSlot(dx, at, slot);
                for (std::int64_t i = 0; i < n; ++i)
                    out[i] = cpu::widened(g[i]) * a[c] + (cpu::widened(v[i]) - m) * b[c] + shift[c];
                cpu::storeFloats(dx, at, static_cast<std::size_t>(n), out);
            },
            sdy, sx);
    }
}

} // namespace mantissa
