#include "engine/numerics/minifloat_codec.h"

#include "engine/numerics/quant_arithmetic.h"
#include "engine/numerics/stochastic_bits.h"
#include "engine/util/check.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

namespace mantissa {

namespace {

using Specials = MiniFloatSpecials;

constexpr EnumEntry<Rounding> kRoundingEntries[] = {
    {Rounding::NearestEven, "rne", "Round to nearest even", "round to the nearest value, ties to the even code"},
    {Rounding::Stochastic, "stochastic", "Stochastic",
     "round up with probability equal to the distance from the value below (seeded)"},
};

std::uint32_t allOnesMagnitude(const MiniFloatFormat& f) { return (1u << (f.exponentBits + f.mantissaBits)) - 1u; }

EncodedMiniFloat overflowCode(const MiniFloatFormat& f, std::uint32_t sign, OverflowRule rule)
{
    if (rule == OverflowRule::Saturate || !f.hasNan())
        return {static_cast<std::uint8_t>(sign | f.maxFiniteMagnitudeCode()), true};
    if (f.hasInf()) // exponent all ones, mantissa zero
        return {static_cast<std::uint8_t>(sign | (allOnesMagnitude(f) & ~((1u << f.mantissaBits) - 1u))), true};
    return {static_cast<std::uint8_t>(sign | allOnesMagnitude(f)), true}; // E4M3 and E8M0: NaN
}

// A nonzero finite |x| as significand * 2^exponent with the significand's top bit at bit 23
// (fp32 subnormals normalised), so floor(log2 |x|) = exponent + 23.
struct Normalised {
    std::uint32_t significand; // 2^23 <= significand < 2^24
    int exponent;
};

Normalised normalise(std::uint32_t absBits)
{
    if (absBits >= 0x00800000u)
        return {(absBits & 0x007fffffu) | 0x00800000u, static_cast<int>(absBits >> 23) - 127 - 23};
    const int shift = std::countl_zero(absBits) - 8; // brings the top set bit to bit 23
    return {absBits << shift, -126 - 23 - shift};
}

// Rounds significand / 2^shift (shift >= 1) to an integer: to nearest even, or up with
// probability (discarded part) / 2^shift using the top `shift` of 64 random bits. The
// arithmetic is quant_arithmetic.h's, which the CUDA kernels compile too.
std::uint64_t roundShifted(std::uint32_t significand, int shift, Rounding rounding, std::uint64_t randomBits)
{
    return qa::roundShifted(significand, shift, rounding == Rounding::Stochastic, randomBits);
}

EncodedMiniFloat encodeSigned(float value, const MiniFloatFormat& f, Rounding rounding, OverflowRule overflow,
                              std::uint64_t randomBits)
{
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    const std::uint32_t sign = (bits >> 31) ? f.signMask() : 0u;
    const std::uint32_t absBits = bits & 0x7fffffffu;
    if (absBits > 0x7f800000u) // NaN: formats without one saturate it to +max (see the header)
        return {static_cast<std::uint8_t>(f.hasNan() ? (sign | allOnesMagnitude(f)) : f.maxFiniteMagnitudeCode()),
                false};
    if (absBits == 0x7f800000u)
        return overflowCode(f, sign, overflow);
    if (absBits == 0)
        return {static_cast<std::uint8_t>(sign), false};
    const Normalised x = normalise(absBits);
    // The binade the result is counted in: the value's own, or the subnormal range's. Its gap
    // between neighbours is 2^(binade - M); counting x in those gaps and rounding to an integer
    // n gives the magnitude code directly: (binade - minExponent) * 2^M + n, which also
    // carries into the next binade (n = 2^(M+1)) and into overflow correctly.
    const int binade = std::max(x.exponent + 23, f.minExponent());
    const int shift = (binade - f.mantissaBits) - x.exponent; // >= 23 - M > 0
    const std::uint64_t n = roundShifted(x.significand, shift, rounding, randomBits);
    const std::uint64_t magnitude = (static_cast<std::uint64_t>(binade - f.minExponent()) << f.mantissaBits) + n;
    if (magnitude > f.maxFiniteMagnitudeCode())
        return overflowCode(f, sign, overflow);
    return {static_cast<std::uint8_t>(sign | magnitude), false};
}

// E8M0: 2^(code - 127), no sign, no zero (see the header for the rules).
EncodedMiniFloat encodeE8M0(float value, Rounding rounding, OverflowRule overflow, std::uint64_t randomBits)
{
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
    const std::uint32_t absBits = bits & 0x7fffffffu;
    if (absBits > 0x7f800000u || (bits >> 31 && absBits != 0))
        return {0xff, false};
    if (absBits == 0x7f800000u)
        return {static_cast<std::uint8_t>(overflow == OverflowRule::Saturate ? 0xfe : 0xff), true};
    if (absBits == 0)
        return {0x00, false};
    const Normalised x = normalise(absBits);
    const int exponent = x.exponent + 23;
    if (exponent < -127) // below the smallest value, and there is no zero to round to
        return {0x00, false};
    const std::uint32_t fraction = x.significand & 0x007fffffu; // value = 2^exponent * (1 + fraction / 2^23)
    const std::uint32_t lowerCode = static_cast<std::uint32_t>(exponent + 127);
    bool up = false;
    if (rounding == Rounding::NearestEven)
        up = fraction > 0x00400000u || (fraction == 0x00400000u && (lowerCode & 1u));
    else
        up = (randomBits >> 41) < fraction; // 23 random bits against the 23 discarded ones
    const std::uint32_t code = lowerCode + (up ? 1u : 0u);
    if (code > 0xfe)
        return {static_cast<std::uint8_t>(overflow == OverflowRule::Saturate ? 0xfe : 0xff), true};
    return {static_cast<std::uint8_t>(code), false};
}

float decodeFromFields(std::uint32_t code, const MiniFloatFormat& f)
{
    if (f.specials == Specials::UnsignedNan)
        return code == 0xff ? std::numeric_limits<float>::quiet_NaN() : std::ldexp(1.0f, static_cast<int>(code) - 127);
    const bool negative = (code & f.signMask()) != 0;
    const std::uint32_t magnitude = code & allOnesMagnitude(f);
    float value = 0.0f;
    if (isMiniFloatNan(static_cast<std::uint8_t>(code), f.id))
        value = std::numeric_limits<float>::quiet_NaN();
    else if (isMiniFloatInf(static_cast<std::uint8_t>(code), f.id))
        value = std::numeric_limits<float>::infinity();
    else {
        const std::uint32_t exponent = magnitude >> f.mantissaBits;
        const std::uint32_t mantissa = magnitude & ((1u << f.mantissaBits) - 1u);
        value = exponent == 0 ? std::ldexp(static_cast<float>(mantissa), f.minExponent() - f.mantissaBits)
                              : std::ldexp(static_cast<float>((1u << f.mantissaBits) | mantissa),
                                           static_cast<int>(exponent) - f.bias - f.mantissaBits);
    }
    return negative ? -value : value;
}

using DecodeTable = std::array<float, 256>;

const DecodeTable& decodeTable(MiniFloat id)
{
    static const std::array<DecodeTable, 6> tables = [] {
        std::array<DecodeTable, 6> built{};
        for (const MiniFloatFormat& f : miniFloatFormats()) {
            DecodeTable& table = built[static_cast<std::size_t>(f.id)];
            table.fill(std::numeric_limits<float>::quiet_NaN()); // codes wider than the format
            for (std::uint32_t code = 0; code < f.codeCount(); ++code)
                table[code] = decodeFromFields(code, f);
        }
        return built;
    }();
    return tables[static_cast<std::size_t>(id)];
}

// Conversions of large tensors are split across threads; each element's stochastic draw
// depends only on its index, so the split does not change a bit.
constexpr std::size_t kParallelChunk = 1 << 16;

template <typename Convert>
void forChunks(std::size_t n, Convert convert)
{
    if (n < 2 * kParallelChunk) {
        convert(std::size_t{0}, n);
        return;
    }
    const auto chunks = static_cast<std::int64_t>((n + kParallelChunk - 1) / kParallelChunk);
#pragma omp parallel for schedule(static)
    for (std::int64_t c = 0; c < chunks; ++c) {
        const std::size_t begin = static_cast<std::size_t>(c) * kParallelChunk;
        convert(begin, std::min(n, begin + kParallelChunk));
    }
}

} // namespace

template <>
std::span<const EnumEntry<Rounding>> enumEntries<Rounding>()
{
    return kRoundingEntries;
}

EncodedMiniFloat encodeMiniFloatWith(float value, MiniFloat format, Rounding rounding, OverflowRule overflow,
                                     std::uint64_t randomBits)
{
    if (format == MiniFloat::E8M0)
        return encodeE8M0(value, rounding, overflow, randomBits);
    return encodeSigned(value, miniFloatFormat(format), rounding, overflow, randomBits);
}

std::uint8_t encodeMiniFloat(float value, MiniFloat format, const MiniFloatEncoding& encoding, std::uint64_t counter)
{
    const std::uint64_t random =
        encoding.rounding == Rounding::Stochastic ? stochasticBits(stochasticStream(encoding.seed), counter) : 0;
    return encodeMiniFloatWith(value, format, encoding.rounding, encoding.overflow, random).code;
}

float decodeMiniFloat(std::uint8_t code, MiniFloat format) { return decodeTable(format)[code]; }

bool isMiniFloatNan(std::uint8_t code, MiniFloat format)
{
    const MiniFloatFormat& f = miniFloatFormat(format);
    const std::uint32_t magnitude = code & allOnesMagnitude(f);
    switch (f.specials) {
    case Specials::None: return false;
    case Specials::UnsignedNan:
    case Specials::AllOnesNan: return magnitude == allOnesMagnitude(f);
    case Specials::IeeeInfNan:
        return (magnitude >> f.mantissaBits) == (1u << f.exponentBits) - 1u &&
               (magnitude & ((1u << f.mantissaBits) - 1u)) != 0;
    }
    return false;
}

bool isMiniFloatInf(std::uint8_t code, MiniFloat format)
{
    const MiniFloatFormat& f = miniFloatFormat(format);
    const std::uint32_t magnitude = code & allOnesMagnitude(f);
    return f.hasInf() && magnitude == (((1u << f.exponentBits) - 1u) << f.mantissaBits);
}

void encodeMiniFloats(std::span<const float> values, std::span<std::uint8_t> codes, MiniFloat format,
                      const MiniFloatEncoding& encoding, std::uint64_t firstCounter)
{
    MANTISSA_ASSERT(codes.size() == values.size());
    const std::uint64_t stream = stochasticStream(encoding.seed);
    const bool stochastic = encoding.rounding == Rounding::Stochastic;
    forChunks(values.size(), [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
            const std::uint64_t random = stochastic ? stochasticBits(stream, firstCounter + i) : 0;
            codes[i] = encodeMiniFloatWith(values[i], format, encoding.rounding, encoding.overflow, random).code;
        }
    });
}

void decodeMiniFloats(std::span<const std::uint8_t> codes, std::span<float> values, MiniFloat format)
{
    MANTISSA_ASSERT(codes.size() == values.size());
    const DecodeTable& table = decodeTable(format);
    for (std::size_t i = 0; i < codes.size(); ++i)
        values[i] = table[codes[i]];
}

void roundThroughMiniFloat(std::span<float> values, MiniFloat format, const MiniFloatEncoding& encoding,
                           std::uint64_t firstCounter)
{
    const std::uint64_t stream = stochasticStream(encoding.seed);
    const bool stochastic = encoding.rounding == Rounding::Stochastic;
    const DecodeTable& table = decodeTable(format);
    forChunks(values.size(), [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
            const std::uint64_t random = stochastic ? stochasticBits(stream, firstCounter + i) : 0;
            values[i] =
                table[encodeMiniFloatWith(values[i], format, encoding.rounding, encoding.overflow, random).code];
        }
    });
}

} // namespace mantissa
