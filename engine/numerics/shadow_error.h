#pragma once
// How far a tensor a low-precision step computed lies from the same tensor of an fp32 pass
// (the shadow error track, engine/lens/shadow_model.h). What is kept are sums, from which
// every measure follows: they store exactly, add across parts of a tensor, and a measure that
// is infinite (the SQNR of an exact tensor) never has to be stored as a number.
#include <cstdint>
#include <span>

namespace mantissa {

struct ErrorEnergies {
    std::int64_t count = 0;     // elements compared
    std::int64_t nonFinite = 0; // elements non-finite in the compared tensor or the reference
    // Over the elements finite in both (r: the fp32 reference, c: the compared tensor, unscaled):
    double reference = 0; // sum r^2
    double compared = 0;  // sum c^2
    double error = 0;     // sum (c - r)^2
    double dot = 0;       // sum c r

    // RMS(c - r) / RMS(r): 0 when identical; +Inf when r is all zero and c is not; NaN when
    // any element was non-finite (the step overflowed there: no error can be stated).
    double relativeRms() const;
    // c.r / (|c| |r|): 1 for identical directions; 1 when both are all zero, 0 when one is.
    // NaN when any element was non-finite.
    double cosine() const;
    // 10 log10(sum r^2 / sum (c - r)^2) in dB: +Inf when identical (both all zero included),
    // -Inf when r is all zero and c is not; NaN when any element was non-finite.
    double sqnrDb() const;
};

// Compares `compared`, multiplied by `unscale` (1 / the loss scale for a scaled gradient), with
// `reference`; the spans must have the same length. Sums in double.
ErrorEnergies measureError(std::span<const float> compared, std::span<const float> reference, double unscale = 1.0);

} // namespace mantissa
