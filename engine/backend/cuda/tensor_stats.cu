// The numerics lens's measurement of one tensor, on the device: the same classification as
// measureChunk in engine/numerics/tensor_stats.cpp (integer compares of |x|'s fp32 bits
// against the target type's rounding thresholds), so the counts and the histogram are those
// the host would find, bit for bit. Each block gathers its counts and histogram in shared
// memory and adds them to the result once; the largest magnitude travels as its bit
// pattern through an integer atomicMax.
#include "engine/backend/cuda/device_numerics.cuh"
#include "engine/backend/cuda/kernels.h"

#include <algorithm>

namespace mantissa::cuda {

namespace {

constexpr unsigned kAbsMask = 0x7fffffffu;
constexpr unsigned kInfBits = 0x7f800000u;
constexpr int kCounts = 6; // zeros, underflow, subnormal, overflow, nonFinite, nan

__device__ __forceinline__ int exponentBin(unsigned bits)
{
    int e = static_cast<int>(bits >> 23) - 127;
    e = e < kHistogramMinExponent ? kHistogramMinExponent : (e > kHistogramMaxExponent ? kHistogramMaxExponent : e);
    return e - kHistogramMinExponent + 1;
}

__global__ void tensorStatsKernel(const void* x, DType xType, std::int64_t n, RoundingThresholds t,
                                  float histogramScale, DeviceTensorStats* out)
{
    __shared__ unsigned histogram[kHistogramBins];
    __shared__ unsigned counts[kCounts];
    __shared__ unsigned amax;
    for (int b = static_cast<int>(threadIdx.x); b < kHistogramBins; b += static_cast<int>(blockDim.x))
        histogram[b] = 0;
    if (threadIdx.x < kCounts)
        counts[threadIdx.x] = 0;
    if (threadIdx.x == 0)
        amax = 0;
    __syncthreads();

    const bool rescale = histogramScale != 1.0f;
    unsigned zeros = 0, underflow = 0, subnormal = 0, overflow = 0, nonFinite = 0, nan = 0, largest = 0;
    for (std::int64_t i = firstIndex(); i < n; i += gridStride()) {
        const unsigned a = __float_as_uint(loadAs(x, xType, i)) & kAbsMask;
        if (a >= kInfBits) {
            ++nonFinite;
            nan += a > kInfBits;
            atomicAdd(&histogram[kHistogramNonFiniteBin], 1u);
            continue;
        }
        if (a == 0) {
            ++zeros;
            atomicAdd(&histogram[kHistogramZeroBin], 1u);
            continue;
        }
        underflow += a <= t.underflowMax;
        subnormal += a > t.underflowMax && a <= t.subnormalMax;
        overflow += a >= t.overflowMin;
        // The same fp32 product as the host's (no fma to contract into).
        const unsigned shown = rescale ? __float_as_uint(__fmul_rn(__uint_as_float(a), histogramScale)) : a;
        if (shown >= kInfBits) {
            atomicAdd(&histogram[kHistogramNonFiniteBin], 1u);
            continue;
        }
        largest = max(largest, shown);
        atomicAdd(&histogram[exponentBin(shown)], 1u);
    }
    atomicAdd(&counts[0], zeros);
    atomicAdd(&counts[1], underflow);
    atomicAdd(&counts[2], subnormal);
    atomicAdd(&counts[3], overflow);
    atomicAdd(&counts[4], nonFinite);
    atomicAdd(&counts[5], nan);
    atomicMax(&amax, largest);
    __syncthreads();

    for (int b = static_cast<int>(threadIdx.x); b < kHistogramBins; b += static_cast<int>(blockDim.x))
        if (histogram[b])
            atomicAdd(&out->histogram[b], static_cast<unsigned long long>(histogram[b]));
    if (threadIdx.x < kCounts && counts[threadIdx.x]) {
        unsigned long long* total[kCounts] = {&out->zeros,    &out->underflow, &out->subnormal,
                                              &out->overflow, &out->nonFinite, &out->nan};
        atomicAdd(total[threadIdx.x], static_cast<unsigned long long>(counts[threadIdx.x]));
    }
    if (threadIdx.x == 0)
        atomicMax(&out->amaxBits, amax);
}

} // namespace

void launchTensorStats(const void* x, DType xType, std::int64_t n, RoundingThresholds thresholds, float histogramScale,
                       DeviceTensorStats* out, cudaStream_t stream)
{
    cudaMemsetAsync(out, 0, sizeof(DeviceTensorStats), stream);
    if (n <= 0)
        return;
    // Few enough blocks that their ~70 global atomics each stay cheap, enough to fill a GPU.
    // A block's 32-bit shared counters then see at most n / 1024 elements: no overflow below 2^42.
    const unsigned blocks = std::min(blocksFor(n), 1024u);
    tensorStatsKernel<<<blocks, kThreadsPerBlock, 0, stream>>>(x, xType, n, thresholds, histogramScale, out);
}

} // namespace mantissa::cuda
