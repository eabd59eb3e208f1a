// Batch normalisation over x = [batch, channels, plane], reproducing cpu/batch_norm.cpp
// operation for operation, so the statistics come out bit for bit the CPU's and repeat on
// every run (no atomics; every sum has a fixed order).
//
// plane > 1: the CPU sums each plane (sample, channel) through reductions.h: chunks of 1024
// values, 16 fp32 lanes per chunk, the chunk's leftover values and then the lanes added into
// a double. Here 16 threads play the 16 lanes of one sample's chunk, a block covers one
// channel and 16 samples, and every plane's total goes to scratch memory; one thread per
// channel then adds its plane totals in sample order, exactly the CPU's sequence of double
// sums. Statistics in passes (plane sums, means, squared deviations from the mean rounded to
// fp32, terms), then every element normalised in parallel. (One block per channel, doing all
// of it, was a fifth of a small cnn's step on an H100: 32 channels filled 32 of 132 SMs.)
//
// plane == 1 ([N, C]): the CPU accumulates each channel straight into double down the
// batch; one thread per channel does the same serial sums (coalesced across channels).
//
// The per-channel scalars (inverse std, running statistics, backward coefficients) are the
// CPU's double expressions, and every fp32 product the CPU's build fuses into an FMA is an
// explicit fma here (explicit_rounding.cuh).
#include "engine/backend/cuda/device_numerics.cuh"
#include "engine/backend/cuda/explicit_rounding.cuh"
#include "engine/backend/cuda/kernels.h"

#include <algorithm>

namespace mantissa::cuda {

namespace {

// reductions.h's shape: lanes per chunk and chunk length.
constexpr int kLanes = 16;
constexpr std::int64_t kChunk = 1024;
constexpr int kPlaneThreads = 256;
constexpr int kGroups = kPlaneThreads / kLanes; // samples per pass of a plane kernel
constexpr int kColumnThreads = 128;

struct Layout {
    std::int64_t batch, channels, plane;
    __device__ std::int64_t offset(std::int64_t sample, std::int64_t c) const
    {
        return (sample * channels + c) * plane;
    }
};

// --- element formulas (host-callable so a host test can hold them to the CPU) ----------------

// y = (x - mean) * scale + shift.
struct NormaliseTerms {
    float mean, scale, shift;
};

__host__ __device__ inline float normalised(float x, NormaliseTerms t)
{
    return exact::fma(exact::sub(x, t.mean), t.scale, t.shift);
}

// dx = dy * a + (x - mean) * b + shift.
struct GradientTerms {
    float mean, a, b, shift;
};

__host__ __device__ inline float inputGradient(float dy, float x, GradientTerms t)
{
    return exact::add(exact::fma(dy, t.a, exact::mul(exact::sub(x, t.mean), t.b)), t.shift);
}

// Lane and leftover terms of the CPU's sums: a lane accumulates in fp32 (fused), a leftover
// value is rounded to fp32 and then added into the double.
__host__ __device__ inline float squareLane(float acc, float x, float mean)
{
    const float d = exact::sub(x, mean);
    return exact::fma(d, d, acc);
}
__host__ __device__ inline float squareTail(float x, float mean)
{
    const float d = exact::sub(x, mean);
    return exact::mul(d, d);
}
__host__ __device__ inline float dotLane(float acc, float dy, float x, float mean)
{
    return exact::fma(dy, exact::sub(x, mean), acc);
}
__host__ __device__ inline float dotTail(float dy, float x, float mean) { return exact::mul(dy, exact::sub(x, mean)); }

// A training forward's per-channel work once the batch mean and biased variance are known:
// saved statistics, the PyTorch-convention running update (unbiased variance), and the
// normalisation terms.
__host__ __device__ inline NormaliseTerms trainingTerms(std::int64_t c, double mean, double var, double count,
                                                        const float* gamma, const float* beta, float* runningMean,
                                                        float* runningVar, float* savedMean, float* savedInvStd,
                                                        float momentum, float epsilon)
{
    const double unbias = count > 1 ? count / (count - 1) : 1.0;
    const float m = static_cast<float>(mean);
    const float invStd = static_cast<float>(1.0 / ::sqrt(var + epsilon));
    savedMean[c] = m;
    savedInvStd[c] = invStd;
    const double keep = 1.0 - momentum;
    runningMean[c] = static_cast<float>(
        exact::fma(keep, static_cast<double>(runningMean[c]), exact::mul(static_cast<double>(momentum), mean)));
    runningVar[c] = static_cast<float>(exact::fma(keep, static_cast<double>(runningVar[c]),
                                                  exact::mul(exact::mul(static_cast<double>(momentum), var), unbias)));
    return {m, exact::mul(gamma[c], invStd), beta[c]};
}

__host__ __device__ inline NormaliseTerms inferenceTerms(std::int64_t c, const float* gamma, const float* beta,
                                                         const float* runningMean, const float* runningVar,
                                                         float epsilon)
{
    const float invStd = static_cast<float>(1.0 / ::sqrt(static_cast<double>(runningVar[c]) + epsilon));
    return {runningMean[c], exact::mul(gamma[c], invStd), beta[c]};
}

// The backward's per-channel work from sum(dy) and sum(dy * (x - mean)).
__host__ __device__ inline GradientTerms gradientTerms(std::int64_t c, double sumDy, double sumDyXmu, double count,
                                                       const float* gamma, const float* savedMean,
                                                       const float* savedInvStd, float* dgamma, float* dbeta)
{
    const double g = gamma[c], s = savedInvStd[c];
    dbeta[c] = static_cast<float>(sumDy);
    dgamma[c] = static_cast<float>(sumDyXmu * s);
    const double k = g * s;
    const double xCoefficient = -k * s * s * sumDyXmu / count;
    return {savedMean[c], static_cast<float>(k), static_cast<float>(xCoefficient),
            static_cast<float>(-k * sumDy / count)};
}

// --- plane > 1: one block per channel ------------------------------------------------------------

__device__ __forceinline__ std::int64_t chunkLength(std::int64_t plane, std::int64_t chunk)
{
    const std::int64_t left = plane - chunk * kChunk;
    return left < kChunk ? left : kChunk;
}

// `total` plus the 16 lanes of this thread's group, added in lane order. Every thread of the
// warp must call it; each thread of a group gets its group's result.
__device__ __forceinline__ double addLanes(double total, float lane)
{
    for (int j = 0; j < kLanes; ++j)
        total += __shfl_sync(0xffffffffu, lane, j, kLanes);
    return total;
}

// This block's channel and this group's sample: a block covers one channel and kGroups
// samples, a 16-thread group one plane (blockIdx.y * kGroups + group).
struct PlaneSlot {
    std::int64_t c, sample;
    int lane;
    bool active;
};

__device__ __forceinline__ PlaneSlot planeSlot(const Layout& l)
{
    const int group = static_cast<int>(threadIdx.x) / kLanes;
    const std::int64_t sample = static_cast<std::int64_t>(blockIdx.y) * kGroups + group;
    return {static_cast<std::int64_t>(blockIdx.x), sample, static_cast<int>(threadIdx.x) % kLanes, sample < l.batch};
}

// One plane's sum of term(x), in the order of reductions.h's mappedSum (a fresh double per
// chunk: the chunk's leftovers, then its 16 lanes). `laneStep(acc, x)` and `tailTerm(x)` are
// the lane and leftover forms of the term. Every thread of the warp must call it (lane
// shuffles); an inactive group's total is 0.
template <typename LaneStep, typename TailTerm>
__device__ double planeSum(const void* x, DType xType, const Layout& l, const PlaneSlot& at, LaneStep laneStep,
                           TailTerm tailTerm)
{
    const std::int64_t chunks = (l.plane + kChunk - 1) / kChunk;
    const std::int64_t base = at.active ? l.offset(at.sample, at.c) : 0;
    double planeTotal = 0;
    for (std::int64_t chunk = 0; chunk < chunks; ++chunk) {
        const std::int64_t start = base + chunk * kChunk;
        const std::int64_t count = chunkLength(l.plane, chunk);
        const std::int64_t whole = count / kLanes * kLanes;
        float acc = 0;
        double chunkTotal = 0;
        if (at.active) {
            for (std::int64_t i = at.lane; i < whole; i += kLanes)
                acc = laneStep(acc, loadAs(x, xType, start + i));
            for (std::int64_t i = whole; i < count; ++i)
                chunkTotal += tailTerm(loadAs(x, xType, start + i));
        }
        chunkTotal = addLanes(chunkTotal, acc);
        planeTotal += chunkTotal;
    }
    return planeTotal;
}

// The channel's plane totals in sample order into one double, the order the CPU adds them.
__device__ __forceinline__ double channelTotal(const double* planeTotals, const Layout& l, std::int64_t c)
{
    double total = 0;
    for (std::int64_t sample = 0; sample < l.batch; ++sample)
        total += planeTotals[c * l.batch + sample];
    return total;
}

__device__ __forceinline__ std::int64_t channelOf(std::int64_t i, const Layout& l) { return i / l.plane % l.channels; }

// Pass 1 (training): each plane's sum of x, to sums[c * batch + sample].
__global__ void planeSumsKernel(const void* x, DType xType, Layout l, double* sums)
{
    const PlaneSlot at = planeSlot(l);
    const double total = planeSum(
        x, xType, l, at, [](float acc, float v) { return exact::add(acc, v); }, [](float v) { return v; });
    if (at.active && at.lane == 0)
        sums[at.c * l.batch + at.sample] = total;
}

// Pass 2: each channel's mean, as a double (the statistics) and rounded to fp32 (the
// deviations of pass 3: the CPU takes them from the mean rounded to fp32).
__global__ void channelMeansKernel(const double* sums, Layout l, double* means, float* means32)
{
    const std::int64_t c = firstIndex();
    if (c >= l.channels)
        return;
    const double mean = channelTotal(sums, l, c) / static_cast<double>(l.batch * l.plane);
    means[c] = mean;
    means32[c] = static_cast<float>(mean);
}

// Pass 3: each plane's sum of squared deviations from the fp32 mean.
__global__ void planeSquaresKernel(const void* x, DType xType, Layout l, const float* means32, double* squares)
{
    const PlaneSlot at = planeSlot(l);
    const float mean = means32[at.c];
    const double total = planeSum(
        x, xType, l, at, [mean](float acc, float v) { return squareLane(acc, v, mean); },
        [mean](float v) { return squareTail(v, mean); });
    if (at.active && at.lane == 0)
        squares[at.c * l.batch + at.sample] = total;
}

// Pass 4: each channel's statistics, running update and normalisation terms.
__global__ void trainingTermsKernel(const double* squares, const double* means, Layout l, const float* gamma,
                                    const float* beta, float* runningMean, float* runningVar, float* savedMean,
                                    float* savedInvStd, float momentum, float epsilon, NormaliseTerms* terms)
{
    const std::int64_t c = firstIndex();
    if (c >= l.channels)
        return;
    const double count = static_cast<double>(l.batch * l.plane);
    terms[c] = trainingTerms(c, means[c], channelTotal(squares, l, c) / count, count, gamma, beta, runningMean,
                             runningVar, savedMean, savedInvStd, momentum, epsilon);
}

__global__ void inferenceTermsKernel(Layout l, const float* gamma, const float* beta, const float* runningMean,
                                     const float* runningVar, float epsilon, NormaliseTerms* terms)
{
    const std::int64_t c = firstIndex();
    if (c < l.channels)
        terms[c] = inferenceTerms(c, gamma, beta, runningMean, runningVar, epsilon);
}

// Last pass: y = (x - mean) * scale + shift, every element in parallel (x and y may alias).
__global__ void normaliseKernel(const void* x, DType xType, void* y, DType yType, Layout l, const NormaliseTerms* terms)
{
    const std::int64_t n = l.batch * l.channels * l.plane;
    for (std::int64_t i = firstIndex(); i < n; i += gridStride())
        storeAs(y, yType, i, normalised(loadAs(x, xType, i), terms[channelOf(i, l)]));
}

// Backward pass 1: each plane's sum(dy) (a fresh double per chunk) and sum(dy * (x - mean))
// (one double running through the plane's chunks: leftovers, then lanes), as the CPU sums.
__global__ void planeGradientSumsKernel(const void* x, DType xType, const void* dy, DType dyType,
                                        const float* savedMean, Layout l, double* dySums, double* dotSums)
{
    const PlaneSlot at = planeSlot(l);
    const float mean = savedMean[at.c];
    const std::int64_t chunks = (l.plane + kChunk - 1) / kChunk;
    const std::int64_t base = at.active ? l.offset(at.sample, at.c) : 0;
    double planeDy = 0, planeDot = 0;
    for (std::int64_t chunk = 0; chunk < chunks; ++chunk) {
        const std::int64_t start = base + chunk * kChunk;
        const std::int64_t n = chunkLength(l.plane, chunk);
        const std::int64_t whole = n / kLanes * kLanes;
        float laneDy = 0, laneDot = 0;
        double chunkDy = 0;
        if (at.active) {
            for (std::int64_t i = at.lane; i < whole; i += kLanes) {
                const float g = loadAs(dy, dyType, start + i);
                laneDy = exact::add(laneDy, g);
                laneDot = dotLane(laneDot, g, loadAs(x, xType, start + i), mean);
            }
            for (std::int64_t i = whole; i < n; ++i) {
                const float g = loadAs(dy, dyType, start + i);
                chunkDy += g;
                planeDot += dotTail(g, loadAs(x, xType, start + i), mean);
            }
        }
        planeDy += addLanes(chunkDy, laneDy);
        planeDot = addLanes(planeDot, laneDot);
    }
    if (at.active && at.lane == 0) {
        dySums[at.c * l.batch + at.sample] = planeDy;
        dotSums[at.c * l.batch + at.sample] = planeDot;
    }
}

// Backward pass 2: each channel's gamma and beta gradients and input-gradient terms.
__global__ void gradientTermsKernel(const double* dySums, const double* dotSums, Layout l, const float* gamma,
                                    const float* savedMean, const float* savedInvStd, float* dgamma, float* dbeta,
                                    GradientTerms* terms)
{
    const std::int64_t c = firstIndex();
    if (c >= l.channels)
        return;
    terms[c] = gradientTerms(c, channelTotal(dySums, l, c), channelTotal(dotSums, l, c),
                             static_cast<double>(l.batch * l.plane), gamma, savedMean, savedInvStd, dgamma, dbeta);
}

// Backward pass 3: dx for every element in parallel (dx may alias dy).
__global__ void inputGradientKernel(const void* x, DType xType, const void* dy, DType dyType, void* dx, DType dxType,
                                    Layout l, const GradientTerms* terms)
{
    const std::int64_t n = l.batch * l.channels * l.plane;
    for (std::int64_t i = firstIndex(); i < n; i += gridStride())
        storeAs(dx, dxType, i, inputGradient(loadAs(dy, dyType, i), loadAs(x, xType, i), terms[channelOf(i, l)]));
}

// --- plane == 1: one thread per channel ------------------------------------------------------------

__global__ void columnForwardKernel(const void* x, DType xType, const float* gamma, const float* beta, void* y,
                                    DType yType, float* runningMean, float* runningVar, float* savedMean,
                                    float* savedInvStd, std::int64_t batch, std::int64_t channels, bool training,
                                    float momentum, float epsilon)
{
    const double count = static_cast<double>(batch);
    for (std::int64_t c = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; c < channels;
         c += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        NormaliseTerms t;
        if (training) {
            double mean = 0;
            for (std::int64_t i = 0; i < batch; ++i)
                mean += loadAs(x, xType, i * channels + c);
            mean /= count;
            double var = 0;
            for (std::int64_t i = 0; i < batch; ++i) {
                const double d = loadAs(x, xType, i * channels + c) - mean;
                var = exact::fma(d, d, var);
            }
            var /= count;
            t = trainingTerms(c, mean, var, count, gamma, beta, runningMean, runningVar, savedMean, savedInvStd,
                              momentum, epsilon);
        } else {
            t = inferenceTerms(c, gamma, beta, runningMean, runningVar, epsilon);
        }
        for (std::int64_t i = 0; i < batch; ++i)
            storeAs(y, yType, i * channels + c, normalised(loadAs(x, xType, i * channels + c), t));
    }
}

__global__ void columnBackwardKernel(const void* x, DType xType, const void* dy, DType dyType, const float* gamma,
                                     const float* savedMean, const float* savedInvStd, void* dx, DType dxType,
                                     float* dgamma, float* dbeta, std::int64_t batch, std::int64_t channels)
{
    for (std::int64_t c = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; c < channels;
         c += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const float mean = savedMean[c];
        double sumDy = 0, sumDyXmu = 0;
        for (std::int64_t i = 0; i < batch; ++i) {
            const float g = loadAs(dy, dyType, i * channels + c);
            sumDy += g;
            // The deviation is an fp32 difference, widened before the double product.
            const float deviation = exact::sub(loadAs(x, xType, i * channels + c), mean);
            sumDyXmu = exact::fma(static_cast<double>(g), static_cast<double>(deviation), sumDyXmu);
        }
        const GradientTerms t =
            gradientTerms(c, sumDy, sumDyXmu, static_cast<double>(batch), gamma, savedMean, savedInvStd, dgamma, dbeta);
        for (std::int64_t i = 0; i < batch; ++i) {
            const std::int64_t at = i * channels + c;
            storeAs(dx, dxType, at, inputGradient(loadAs(dy, dyType, at), loadAs(x, xType, at), t));
        }
    }
}

dim3 planeGrid(const Layout& l)
{
    return dim3(static_cast<unsigned>(l.channels), static_cast<unsigned>((l.batch + kGroups - 1) / kGroups));
}

// The plane path's scratch: per-plane double sums, then per-channel values.
struct PlaneScratch {
    double *sums, *more, *means;
    float* means32;
    void* terms;
};

PlaneScratch carve(void* scratch, std::int64_t batch, std::int64_t channels)
{
    auto* doubles = static_cast<double*>(scratch);
    const std::int64_t planes = batch * channels;
    PlaneScratch p{};
    p.sums = doubles;
    p.more = doubles + planes;
    p.means = doubles + 2 * planes;
    p.means32 = reinterpret_cast<float*>(doubles + 2 * planes + channels);
    p.terms = p.means32 + channels;
    return p;
}

} // namespace

std::int64_t batchNormScratchBytes(std::int64_t batch, std::int64_t channels, std::int64_t plane)
{
    if (batch <= 0 || channels <= 0 || plane <= 1)
        return 0;
    const std::int64_t terms = std::max(sizeof(NormaliseTerms), sizeof(GradientTerms));
    return (2 * batch * channels + channels) * static_cast<std::int64_t>(sizeof(double)) +
           channels * static_cast<std::int64_t>(sizeof(float) + terms);
}

void launchBatchNormForward(const void* x, DType xType, const float* gamma, const float* beta, void* y, DType yType,
                            float* runningMean, float* runningVar, float* savedMean, float* savedInvStd,
                            std::int64_t batch, std::int64_t channels, std::int64_t plane, bool training,
                            float momentum, float epsilon, void* scratch, cudaStream_t stream)
{
    if (batch <= 0 || channels <= 0 || plane <= 0)
        return;
    if (plane == 1) {
        columnForwardKernel<<<blocksFor(channels, kColumnThreads), kColumnThreads, 0, stream>>>(
            x, xType, gamma, beta, y, yType, runningMean, runningVar, savedMean, savedInvStd, batch, channels, training,
            momentum, epsilon);
        return;
    }
    const Layout l{batch, channels, plane};
    const PlaneScratch p = carve(scratch, batch, channels);
    auto* terms = static_cast<NormaliseTerms*>(p.terms);
    const unsigned channelBlocks = blocksFor(channels, kColumnThreads);
    if (training) {
        planeSumsKernel<<<planeGrid(l), kPlaneThreads, 0, stream>>>(x, xType, l, p.sums);
        channelMeansKernel<<<channelBlocks, kColumnThreads, 0, stream>>>(p.sums, l, p.means, p.means32);
        planeSquaresKernel<<<planeGrid(l), kPlaneThreads, 0, stream>>>(x, xType, l, p.means32, p.more);
        trainingTermsKernel<<<channelBlocks, kColumnThreads, 0, stream>>>(
            p.more, p.means, l, gamma, beta, runningMean, runningVar, savedMean, savedInvStd, momentum, epsilon, terms);
    } else {
        inferenceTermsKernel<<<channelBlocks, kColumnThreads, 0, stream>>>(l, gamma, beta, runningMean, runningVar,
                                                                           epsilon, terms);
    }
    normaliseKernel<<<blocksFor(batch * channels * plane), kThreadsPerBlock, 0, stream>>>(x, xType, y, yType, l, terms);
}

void launchBatchNormBackward(const void* x, DType xType, const void* dy, DType dyType, const float* gamma,
                             const float* savedMean, const float* savedInvStd, void* dx, DType dxType, float* dgamma,
                             float* dbeta, std::int64_t batch, std::int64_t channels, std::int64_t plane, void* scratch,
                             cudaStream_t stream)
{
    if (batch <= 0 || channels <= 0 || plane <= 0)
        return;
    if (plane == 1) {
        columnBackwardKernel<<<blocksFor(channels, kColumnThreads), kColumnThreads, 0, stream>>>(
            x, xType, dy, dyType, gamma, savedMean, savedInvStd, dx, dxType, dgamma, dbeta, batch, channels);
        return;
    }
    const Layout l{batch, channels, plane};
    const PlaneScratch p = carve(scratch, batch, channels);
    auto* terms = static_cast<GradientTerms*>(p.terms);
    planeGradientSumsKernel<<<planeGrid(l), kPlaneThreads, 0, stream>>>(x, xType, dy, dyType, savedMean, l, p.sums,
                                                                        p.more);
    gradientTermsKernel<<<blocksFor(channels, kColumnThreads), kColumnThreads, 0, stream>>>(
        p.sums, p.more, l, gamma, savedMean, savedInvStd, dgamma, dbeta, terms);
    inputGradientKernel<<<blocksFor(batch * channels * plane), kThreadsPerBlock, 0, stream>>>(x, xType, dy, dyType, dx,
                                                                                              dxType, l, terms);
}

} // namespace mantissa::cuda
