#pragma once
// The arithmetic the fast quantisers (fast_quantizer.h, fast_operand_quantizer.h) share: the
// rounding of one fp32 value to an element format on its bits, and the scale plans of
// block_quantizer.cpp's rules computed from a block's amax. Private to engine/numerics.
#include "engine/numerics/quant_format.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace mantissa::fastq {

// What the element rounding needs, taken once from the format's table.
struct ElementRounding {
    std::uint32_t shift;  // fp32 mantissa bits cut: 23 - M
    float minNormal;      // below: the subnormal rounding
    float subnormalMagic; // 2^(emin - M + 23): a + magic - magic rounds a to the subnormal grid
    float maxFinite;      // saturation
    int mantissaBits;     // M, for stochastic rounding's ulp
    int minExponent;      // emin: the subnormal binade
};

inline ElementRounding roundingOf(MiniFloat element)
{
    const MiniFloatFormat& f = miniFloatFormat(element);
    return {static_cast<std::uint32_t>(23 - f.mantissaBits),
            f.minNormal(),
            std::ldexp(f.minSubnormal(), 23),
            f.maxFinite(),
            f.mantissaBits,
            f.minExponent()};
}

// One value scaled by `multiplier`, rounded to the element format (normal range: add half an
// ulp of the element, ties to even, and cut the mantissa; subnormal range: add and subtract
// 2^(emin - M + 23)), saturated, times `scale`. Branch-free so that the loops calling it vectorise.
inline float roundOne(float x, float multiplier, float scale, const ElementRounding& r)
{
    const float y = x * multiplier;
    const float a = std::fabs(y);
    std::uint32_t bits = std::bit_cast<std::uint32_t>(a);
    bits += ((1u << (r.shift - 1)) - 1u) + ((bits >> r.shift) & 1u);
    bits &= ~((1u << r.shift) - 1u);
    const float normal = std::bit_cast<float>(bits);
    const float subnormal = (a + r.subnormalMagic) - r.subnormalMagic;
    float rounded = a < r.minNormal ? subnormal : normal;
    rounded = std::min(rounded, r.maxFinite);
    return std::copysign(rounded, y) * scale;
}

// 2^e for e in [-149, 127], built from its bits (std::ldexp is a library call per block).
inline float powerOfTwo(int e)
{
    return e >= -126 ? std::bit_cast<float>(static_cast<std::uint32_t>(e + 127) << 23)
                     : std::bit_cast<float>(1u << (e + 149));
}

// roundOne with stochastic rounding against the 64 random bits `random` (stochastic_bits.h):
// quant_arithmetic.h's encodeSaturating then decodeCode, bit for bit, computed on floats. In
// units of the element's ulp at the value's binade, t = |y| / ulp is exact (a scaling by a power
// of two) and so is its fraction f = t - floor(t). The codec rounds up when the top `shift`
// random bits, as an integer, are below the `shift` discarded bits; that is random < f * 2^64
// for every shift, past 64 discarded bits too, so one 64-bit comparison decides. Saturation
// to the largest finite value, as the scaled schemes do.
inline float roundOneStochastic(float x, float multiplier, float scale, const ElementRounding& r, std::uint64_t random)
{
    const float y = x * multiplier;
    const float a = std::fabs(y);
    const int binade = std::max(static_cast<int>(std::bit_cast<std::uint32_t>(a) >> 23) - 127, r.minExponent);
    const float t = a * powerOfTwo(r.mantissaBits - binade);
    const float whole = std::floor(t);
    // f * 2^64 is below 2^64 for any f < 1; a NaN (from an Inf, which the callers refuse anyway)
    // compares false and draws no round-up rather than an undefined conversion.
    const float threshold = (t - whole) * 0x1p64f;
    const bool up = threshold < 0x1p64f && random < static_cast<std::uint64_t>(threshold);
    const float rounded = std::min((whole + (up ? 1.0f : 0.0f)) * powerOfTwo(binade - r.mantissaBits), r.maxFinite);
    return std::copysign(rounded, y) * scale;
}

// The encode multiplier and decode scale of a block, as block_quantizer.cpp plans them.
struct Plan {
    float multiplier, scale;
};

inline Plan fp32Plan(float amax, const QuantFormat& format)
{
    float s = 1.0f;
    if (amax > 0.0f) {
        s = miniFloatFormat(format.element).maxFinite() / amax;
        if (std::isinf(s))
            s = std::numeric_limits<float>::max();
        if (format.powerOfTwoScales)
            s = std::ldexp(1.0f, std::ilogb(s));
    }
    return {s, 1.0f / s};
}

// An MX rule as two integers, for a normal amax with exponent field E and mantissa field F:
// the block's scale exponent is (E - 127) - below, plus 1 where F > upAbove. Floor never adds
// one (no field exceeds 0x7fffff); ceil adds one unless amax is a power of two (F > 0); rceil,
// ceil(log2(amax / max)), adds one where amax's significand exceeds max's: with both
// significands in [1, 2), their quotient lies in (1/2, 1) below, is 1 at equality and in
// (1, 2) above, so log2 of the ratio is rounded up exactly by that comparison.
struct MxScaleSteps {
    int below;
    std::uint32_t upAbove;
};

inline MxScaleSteps mxScaleSteps(const QuantFormat& format)
{
    const MiniFloatFormat& element = miniFloatFormat(format.element);
    switch (format.scaleRule) {
    case MxScaleRule::Floor: return {element.maxExponent(), 0x7fffffu};
    case MxScaleRule::Ceil: return {element.maxExponent(), 0u};
    case MxScaleRule::RCeil: {
        const auto max = std::bit_cast<std::uint32_t>(element.maxFinite());
        return {static_cast<int>(max >> 23) - 127, max & 0x7fffffu};
    }
    }
    return {element.maxExponent(), 0x7fffffu};
}

// The E8M0 exponent of a block whose amax has these bits (amax >= 0). A zero or subnormal amax
// (exponent field 0) reads as 2^-127 and gives an exponent below -127 under every element
// format, whose largest values are at least 2^2, so it clamps to -127 as an exact log would.
inline int mxExponent(std::uint32_t amaxBits, MxScaleSteps steps)
{
    const int floorLog = static_cast<int>(amaxBits >> 23) - 127;
    const int up = (amaxBits & 0x7fffffu) > steps.upAbove ? 1 : 0;
    return std::clamp(floorLog + up - steps.below, -127, 127);
}

inline Plan mxPlan(float amax, const QuantFormat& format)
{
    const int exponent = mxExponent(std::bit_cast<std::uint32_t>(amax), mxScaleSteps(format));
    return {powerOfTwo(-exponent), powerOfTwo(exponent)};
}

inline Plan blockPlan(float amax, const QuantFormat& format)
{
    return format.scheme == ScalingScheme::Mx ? mxPlan(amax, format) : fp32Plan(amax, format);
}

} // namespace mantissa::fastq
