// Batch normalisation over x = [batch, channels, plane], reproducing cpu/batch_norm.cpp
// operation for operation, so the statistics come out bit for bit the CPU's and repeat on
// every run (no atomics; every sum has a fixed order).
//
// plane > 1: one block per channel. The CPU sums each plane (sample, channel) through
// reductions.h: chunks of 1024 values, 16 fp32 lanes per chunk, the chunk's leftover values
// and then the lanes added into a double. Here 16 threads play the 16 lanes of one sample's
// chunk and a block covers 16 samples per pass; each group folds its chunks in order, then
// thread 0 adds the plane totals in sample order, exactly the CPU's sequence of double sums.
// Two passes: the mean, then squared deviations from the mean rounded to fp32.
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

// sum over samples of sum over the plane of term(x), in the order of reductions.h's
// mappedSum (a fresh double per chunk). `laneStep(acc, x)` and `tailTerm(x)` are the lane
// and leftover forms of the term. The result is valid in thread 0 only.
template <typename LaneStep, typename TailTerm>
__device__ double mappedChannelSum(const void* x, DType xType, const Layout& l, std::int64_t c, LaneStep laneStep,
                                   TailTerm tailTerm, double* planeTotals)
{
    const int group = static_cast<int>(threadIdx.x) / kLanes;
    const int lane = static_cast<int>(threadIdx.x) % kLanes;
    const std::int64_t chunks = (l.plane + kChunk - 1) / kChunk;
    double channelTotal = 0;
    for (std::int64_t first = 0; first < l.batch; first += kGroups) {
        const std::int64_t sample = first + group;
        const bool active = sample < l.batch;
        const std::int64_t base = l.offset(sample, c);
        double planeTotal = 0;
        for (std::int64_t chunk = 0; chunk < chunks; ++chunk) {
            const std::int64_t start = base + chunk * kChunk;
            const std::int64_t count = chunkLength(l.plane, chunk);
            const std::int64_t whole = count / kLanes * kLanes;
            float acc = 0;
            double chunkTotal = 0;
            if (active) {
                for (std::int64_t i = lane; i < whole; i += kLanes)
                    acc = laneStep(acc, loadAs(x, xType, start + i));
                for (std::int64_t i = whole; i < count; ++i)
                    chunkTotal += tailTerm(loadAs(x, xType, start + i));
            }
            chunkTotal = addLanes(chunkTotal, acc);
            planeTotal += chunkTotal;
        }
        if (lane == 0)
            planeTotals[group] = planeTotal;
        __syncthreads();
        if (threadIdx.x == 0)
            for (int g = 0; g < kGroups && first + g < l.batch; ++g)
                channelTotal += planeTotals[g];
        __syncthreads();
    }
    return channelTotal;
}

__global__ void planeForwardKernel(const void* x, DType xType, const float* gamma, const float* beta, void* y,
                                   DType yType, float* runningMean, float* runningVar, float* savedMean,
                                   float* savedInvStd, Layout l, bool training, float momentum, float epsilon)
{
    __shared__ double planeTotals[kGroups];
    __shared__ float sharedMean;
    __shared__ NormaliseTerms sharedTerms;
    const double count = static_cast<double>(l.batch * l.plane);
    for (std::int64_t c = blockIdx.x; c < l.channels; c += gridDim.x) {
        if (training) {
            const double sum = mappedChannelSum(
                x, xType, l, c, [](float acc, float v) { return exact::add(acc, v); }, [](float v) { return v; },
                planeTotals);
            if (threadIdx.x == 0)
                sharedMean = static_cast<float>(sum / count);
            __syncthreads();
            // The CPU takes deviations from the mean rounded to fp32.
            const float mean32 = sharedMean;
            const double squares = mappedChannelSum(
                x, xType, l, c, [mean32](float acc, float v) { return squareLane(acc, v, mean32); },
                [mean32](float v) { return squareTail(v, mean32); }, planeTotals);
            if (threadIdx.x == 0)
                sharedTerms = trainingTerms(c, sum / count, squares / count, count, gamma, beta, runningMean,
                                            runningVar, savedMean, savedInvStd, momentum, epsilon);
        } else if (threadIdx.x == 0) {
            sharedTerms = inferenceTerms(c, gamma, beta, runningMean, runningVar, epsilon);
        }
        __syncthreads();
        const NormaliseTerms t = sharedTerms;
        const std::int64_t elements = l.batch * l.plane;
        for (std::int64_t k = threadIdx.x; k < elements; k += blockDim.x) {
            const std::int64_t sample = k / l.plane;
            const std::int64_t at = l.offset(sample, c) + (k - sample * l.plane);
            storeAs(y, yType, at, normalised(loadAs(x, xType, at), t));
        }
        // The next channel rewrites the shared values only after everyone has read them.
        __syncthreads();
    }
}

__global__ void planeBackwardKernel(const void* x, DType xType, const void* dy, DType dyType, const float* gamma,
                                    const float* savedMean, const float* savedInvStd, void* dx, DType dxType,
                                    float* dgamma, float* dbeta, Layout l)
{
    __shared__ double dyTotals[kGroups];
    __shared__ double dotTotals[kGroups];
    __shared__ GradientTerms sharedTerms;
    const int group = static_cast<int>(threadIdx.x) / kLanes;
    const int lane = static_cast<int>(threadIdx.x) % kLanes;
    const std::int64_t chunks = (l.plane + kChunk - 1) / kChunk;
    const double count = static_cast<double>(l.batch * l.plane);
    for (std::int64_t c = blockIdx.x; c < l.channels; c += gridDim.x) {
        const float mean = savedMean[c];
        // sumFloats(dy) per plane (a fresh double per chunk) and dotDeviations(dy, x) per
        // plane (one double running through the plane's chunks: leftovers, then lanes).
        double sumDy = 0, sumDyXmu = 0; // thread 0
        for (std::int64_t first = 0; first < l.batch; first += kGroups) {
            const std::int64_t sample = first + group;
            const bool active = sample < l.batch;
            const std::int64_t base = l.offset(sample, c);
            double planeDy = 0, planeDot = 0;
            for (std::int64_t chunk = 0; chunk < chunks; ++chunk) {
                const std::int64_t start = base + chunk * kChunk;
                const std::int64_t n = chunkLength(l.plane, chunk);
                const std::int64_t whole = n / kLanes * kLanes;
                float laneDy = 0, laneDot = 0;
                double chunkDy = 0;
                if (active) {
                    for (std::int64_t i = lane; i < whole; i += kLanes) {
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
            if (lane == 0) {
                dyTotals[group] = planeDy;
                dotTotals[group] = planeDot;
            }
            __syncthreads();
            if (threadIdx.x == 0) {
                for (int g = 0; g < kGroups && first + g < l.batch; ++g) {
                    sumDy += dyTotals[g];
                    sumDyXmu += dotTotals[g];
                }
            }
            __syncthreads();
        }
        if (threadIdx.x == 0)
            sharedTerms = gradientTerms(c, sumDy, sumDyXmu, count, gamma, savedMean, savedInvStd, dgamma, dbeta);
        __syncthreads();
        const GradientTerms t = sharedTerms;
        const std::int64_t elements = l.batch * l.plane;
        for (std::int64_t k = threadIdx.x; k < elements; k += blockDim.x) {
            const std::int64_t sample = k / l.plane;
            const std::int64_t at = l.offset(sample, c) + (k - sample * l.plane);
            storeAs(dx, dxType, at, inputGradient(loadAs(dy, dyType, at), loadAs(x, xType, at), t));
        }
        __syncthreads();
    }
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

unsigned planeBlocks(std::int64_t channels)
{
    return static_cast<unsigned>(std::clamp<std::int64_t>(channels, 1, 65535));
}

} // namespace

void launchBatchNormForward(const void* x, DType xType, const float* gamma, const float* beta, void* y, DType yType,
                            float* runningMean, float* runningVar, float* savedMean, float* savedInvStd,
                            std::int64_t batch, std::int64_t channels, std::int64_t plane, bool training,
                            float momentum, float epsilon, cudaStream_t stream)
{
    if (batch <= 0 || channels <= 0 || plane <= 0)
        return;
    if (plane == 1) {
        columnForwardKernel<<<blocksFor(channels, kColumnThreads), kColumnThreads, 0, stream>>>(
            x, xType, gamma, beta, y, yType, runningMean, runningVar, savedMean, savedInvStd, batch, channels, training,
            momentum, epsilon);
        return;
    }
    planeForwardKernel<<<planeBlocks(channels), kPlaneThreads, 0, stream>>>(
        x, xType, gamma, beta, y, yType, runningMean, runningVar, savedMean, savedInvStd,
        Layout{batch, channels, plane}, training, momentum, epsilon);
}

void launchBatchNormBackward(const void* x, DType xType, const void* dy, DType dyType, const float* gamma,
                             const float* savedMean, const float* savedInvStd, void* dx, DType dxType, float* dgamma,
                             float* dbeta, std::int64_t batch, std::int64_t channels, std::int64_t plane,
                             cudaStream_t stream)
{
    if (batch <= 0 || channels <= 0 || plane <= 0)
        return;
    if (plane == 1) {
        columnBackwardKernel<<<blocksFor(channels, kColumnThreads), kColumnThreads, 0, stream>>>(
            x, xType, dy, dyType, gamma, savedMean, savedInvStd, dx, dxType, dgamma, dbeta, batch, channels);
        return;
    }
    planeBackwardKernel<<<planeBlocks(channels), kPlaneThreads, 0, stream>>>(
        x, xType, dy, dyType, gamma, savedMean, savedInvStd, dx, dxType, dgamma, dbeta, Layout{batch, channels, plane});
}

} // namespace mantissa::cuda
