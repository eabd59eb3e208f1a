#pragma once
// What a low-precision type makes of a tensor: exponent histogram of log2|x|, absolute
// max, and the fractions that are zero, flush to zero, land in the subnormal range,
// overflow or are non-finite. Computed in fp32 from any dtype; the numerics lens
// (engine/lens) measures every layer's tensors with it on sampled steps.
#include "engine/numerics/dtype.h"

#include <array>
#include <cstddef>
#include <cstdint>

namespace mantissa {

// One bin per binary exponent e (values in [2^e, 2^(e+1))) from 2^-40 to 2^20, plus a
// zero bin and a non-finite bin. Smaller magnitudes (fp32 subnormals included) go to the
// lowest exponent bin, larger finite ones to the highest: the range covers fp16 and the
// gradients of the networks studied here; a wider one would only add empty rows.
constexpr int kHistogramMinExponent = -40;
constexpr int kHistogramMaxExponent = 20;
constexpr int kHistogramExponentBins = kHistogramMaxExponent - kHistogramMinExponent + 1; // 61
constexpr int kHistogramZeroBin = 0;
constexpr int kHistogramNonFiniteBin = kHistogramExponentBins + 1; // 62
constexpr int kHistogramBins = kHistogramExponentBins + 2;         // 63
using ExponentHistogram = std::array<std::uint32_t, kHistogramBins>;

// The bin of an exponent (clamped), and back.
constexpr int histogramBinOfExponent(int exponent)
{
    exponent = exponent < kHistogramMinExponent   ? kHistogramMinExponent
               : exponent > kHistogramMaxExponent ? kHistogramMaxExponent
                                                  : exponent;
    return exponent - kHistogramMinExponent + 1;
}
constexpr int histogramExponentOfBin(int bin) { return bin - 1 + kHistogramMinExponent; }
// The bin a value falls in.
int histogramBin(float value);

struct TensorStats {
    std::int64_t count = 0;
    float amax = 0;                // largest finite |x| (of the measured, possibly unscaled values)
    std::int64_t zeros = 0;        // exactly zero
    std::int64_t underflow = 0;    // nonzero but rounds to zero in the target type
    std::int64_t subnormal = 0;    // rounds to a nonzero subnormal of the target type
    std::int64_t overflow = 0;     // finite but rounds to infinity in the target type
    std::int64_t nonFinite = 0;    // inf or NaN already
    std::int64_t nan = 0;          // of nonFinite, the NaNs (the rest are +-Inf); -1: not recorded
    ExponentHistogram histogram{}; // of the measured values

    double fraction(std::int64_t part) const { return count ? double(part) / double(count) : 0.0; }
    void merge(const TensorStats& other);
};

// The rounding facts of a target type as fp32 bit patterns of |x|, found once per type by
// bisection over the reference rounding (reference_conversions.h), so that the
// classification is exact (2^-25 rounds to zero in fp16, 65520 to infinity) and costs
// integer compares.
struct RoundingThresholds {
    std::uint32_t underflowMax; // largest |x| bits that round to zero
    std::uint32_t subnormalMax; // largest |x| bits that round to a subnormal (or zero)
    std::uint32_t overflowMin;  // smallest |x| bits that round to infinity
};
RoundingThresholds roundingThresholds(DType target);

// Classifies `values` (as given) against `target`; the histogram and amax are of
// values * histogramScale (1 / loss scale shows gradients unscaled while the fractions
// stay those of the values the run stored). Parallel with OpenMP for large inputs.
TensorStats measureValues(const float* values, std::size_t n, DType target, float histogramScale = 1.0f);
// The same for 16-bit values stored as `storage` (fp16 or bf16), widened to fp32 in chunks
// small enough to stay in L1: the CPU backend's Backend::tensorStats for 16-bit tensors.
TensorStats measure16BitValues(const std::uint16_t* words, std::size_t n, DType storage, DType target,
                               float histogramScale = 1.0f);

} // namespace mantissa
