#include "engine/lens/what_if.h"

#include <cmath>

namespace mantissa {

std::optional<ScaleSuggestion> suggestLossScale(const ExponentHistogram& histogram, double percentile, DType target,
                                                int exponentShift)
{
    std::uint64_t nonzero = 0;
    int top = 0;
    for (int bin = 1; bin <= kHistogramExponentBins; ++bin) {
        nonzero += histogram[static_cast<std::size_t>(bin)];
        if (histogram[static_cast<std::size_t>(bin)])
            top = bin;
    }
    if (nonzero == 0)
        return std::nullopt;
    // The bin holding the value of rank ceil(p * n) (1-based) in ascending order.
    const auto rank = static_cast<std::uint64_t>(std::max(1.0, std::ceil(percentile * static_cast<double>(nonzero))));
    std::uint64_t seen = 0;
    int low = top;
    for (int bin = 1; bin <= kHistogramExponentBins; ++bin) {
        seen += histogram[static_cast<std::size_t>(bin)];
        if (seen >= rank) {
            low = bin;
            break;
        }
    }
    const DTypeLimits limits = dtypeLimits(target);
    const int minNormalExponent = std::ilogb(limits.minNormal); // -14 for fp16
    const int maxExponent = std::ilogb(limits.maxFinite);       // 15 for fp16
    const int lowExponent = histogramExponentOfBin(low) + exponentShift;
    const int topExponent = histogramExponentOfBin(top) + exponentShift;
    // Values of the top bin are below 2^(top+1); 2^(top+1) * S <= 2^maxExponent keeps them
    // below the largest finite value (65504 > 2^15) whatever their mantissa.
    const int lowestPower = minNormalExponent - lowExponent;
    const int highestPower = maxExponent - (topExponent + 1);
    ScaleSuggestion s;
    s.lowest = std::ldexp(1.0f, lowestPower);
    s.highest = std::ldexp(1.0f, highestPower);
    s.fits = lowestPower <= highestPower;
    s.suggested = s.fits ? s.lowest : s.highest;
    return s;
}

} // namespace mantissa
