#pragma once
// "What if" for the loss scale: from a gradient's exponent histogram, the power-of-two
// scales that lift a chosen percentile of its nonzero magnitudes into the target type's
// normal range without its largest value overflowing.
#include "engine/numerics/tensor_stats.h"

#include <optional>

namespace mantissa {

struct ScaleSuggestion {
    float lowest = 0;    // the smallest scale that lifts the percentile to the normal range
    float highest = 0;   // the largest scale under which the top bin cannot overflow
    float suggested = 0; // `lowest` when it fits, else `highest` (overflow costs a step, underflow only precision)
    bool fits = false;   // lowest <= highest
};

// `histogram` counts unscaled magnitudes (shift its exponents by exponentShift first: pass
// -log2(scale) for a histogram of scaled values). percentile in (0, 1], e.g. 0.01 for the
// 1st percentile of nonzero |g|. Bins are one binade wide, so the answer is conservative
// by design: the percentile's bin is lifted whole (its lower edge to the smallest normal)
// and the top bin's upper edge must stay below the largest finite value. Non-finite and
// zero counts are ignored; nullopt when no nonzero finite value was counted.
std::optional<ScaleSuggestion> suggestLossScale(const ExponentHistogram& histogram, double percentile,
                                                DType target = DType::F16, int exponentShift = 0);

} // namespace mantissa
