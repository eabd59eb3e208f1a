#pragma once
// fp32 <-> the formats of minifloat_format.h, bit-exact. Encoding rounds to nearest even or
// stochastically; subnormals are produced and read everywhere (no flush to zero).
//
// What leaves the representable range, per format (OFP8 rev. 1.0 section 5; MX v1.0 section 5):
//  - a finite value that rounds above the largest finite value, and +-Inf, "overflow":
//      NonSaturating: E4M3 -> NaN (it has no Inf), E5M2 -> +-Inf, E8M0 -> NaN;
//      Saturate:      +-max finite (Inf too, as CUDA's __NV_SATFINITE conversions do);
//      FP6 and FP4 have no Inf or NaN and always saturate.
//    Rounding happens first, as if the exponent were unbounded: in E4M3, 464 is the tie
//    between 448 and 480 and rounds to even (448); 465 rounds to 480 and overflows.
//  - NaN: stays NaN in E4M3 (S.1111.111), E5M2 (S.11111.11) and E8M0 (0xFF). FP6 and FP4
//    have no NaN: it becomes +max finite, so that it is at least visible as the largest value
//    (in an MX or NVFP4 block a NaN reaches the block scale first and the block decodes as NaN).
//  - below the smallest subnormal: rounds to (signed) zero, or up to the smallest subnormal
//    above half of it. E8M0 has no zero and no sign: zero and tiny values give its smallest
//    value 2^-127 (code 0), negative values give NaN.
// E8M0 has no mantissa bits, so "to even" is decided by the code: a tie between 2^k and
// 2^(k+1) goes to the one with the even code (as ml_dtypes' float8_e8m0fnu does).
//
// Stochastic rounding rounds up with probability equal to the distance from the value below,
// in units of the gap: exactly (the comparison is on the discarded bits against up to 64
// random bits), so it is unbiased. The random bits are stochasticBits(stream(seed), counter)
// with counter = firstCounter + the element's index: reproducible, and independent of threads.
#include "engine/numerics/minifloat_format.h"

#include <cstddef>
#include <cstdint>
#include <span>

namespace mantissa {

enum class Rounding : std::uint8_t { NearestEven, Stochastic };
enum class OverflowRule : std::uint8_t { NonSaturating, Saturate };

template <>
std::span<const EnumEntry<Rounding>> enumEntries<Rounding>();

struct MiniFloatEncoding {
    Rounding rounding = Rounding::NearestEven;
    OverflowRule overflow = OverflowRule::NonSaturating;
    std::uint64_t seed = 0; // stochastic rounding's stream
};

// One encoded value and whether it overflowed (the overflow rule decided its code).
struct EncodedMiniFloat {
    std::uint8_t code = 0;
    bool overflowed = false;
};

// `randomBits` is used only by stochastic rounding (stochasticBits() gives them).
EncodedMiniFloat encodeMiniFloatWith(float value, MiniFloat format, Rounding rounding, OverflowRule overflow,
                                     std::uint64_t randomBits);

// One value; `counter` picks the stochastic draw (an element's index).
std::uint8_t encodeMiniFloat(float value, MiniFloat format, const MiniFloatEncoding& encoding = {},
                             std::uint64_t counter = 0);
// Every code decodes exactly (fp32 holds all of these formats' values). Codes are right-aligned
// (an E2M1 code is 0x0..0xF); bits above the format's width must be zero.
float decodeMiniFloat(std::uint8_t code, MiniFloat format);

bool isMiniFloatNan(std::uint8_t code, MiniFloat format);
bool isMiniFloatInf(std::uint8_t code, MiniFloat format);

// Spans: element i uses counter firstCounter + i. Large spans are split across threads.
void encodeMiniFloats(std::span<const float> values, std::span<std::uint8_t> codes, MiniFloat format,
                      const MiniFloatEncoding& encoding = {}, std::uint64_t firstCounter = 0);
void decodeMiniFloats(std::span<const std::uint8_t> codes, std::span<float> values, MiniFloat format);
// Each value replaced by its encode-then-decode, in place: emulating a tensor stored in `format`.
void roundThroughMiniFloat(std::span<float> values, MiniFloat format, const MiniFloatEncoding& encoding = {},
                           std::uint64_t firstCounter = 0);

} // namespace mantissa
