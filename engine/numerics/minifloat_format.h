#pragma once
// The floating-point formats below 16 bits (issue 17): FP8 E4M3 and E5M2 (OCP 8-bit
// Floating Point Specification, OFP8 rev. 1.0), FP6 E3M2 and E2M3, FP4 E2M1 and the E8M0
// scale (OCP Microscaling Formats (MX) Specification v1.0, section 5). One table describes
// each by its bit fields; every limit and every conversion derives from those fields, so a
// new format is one row, not new code.
#include "engine/util/enum_table.h"

#include <cstdint>
#include <span>
#include <string_view>

namespace mantissa {

enum class MiniFloat : std::uint8_t { E4M3, E5M2, E3M2, E2M3, E2M1, E8M0 };

// Which codes are not ordinary numbers. The OCP formats differ here, and the difference
// decides what an overflow becomes.
enum class MiniFloatSpecials : std::uint8_t {
    None,        // every code is a number (FP6, FP4): no Inf, no NaN
    IeeeInfNan,  // exponent all ones: Inf (mantissa 0) or NaN (E5M2)
    AllOnesNan,  // only S.1111.111 is NaN, no Inf; the all-ones exponent holds numbers (E4M3 "fn")
    UnsignedNan, // no sign bit, no zero; 0xFF is NaN (E8M0)
};

struct MiniFloatFormat {
    MiniFloat id;
    int signBits;     // 1, or 0 for E8M0
    int exponentBits; // E
    int mantissaBits; // M: stored fraction bits
    int bias;
    MiniFloatSpecials specials;

    int bits() const { return signBits + exponentBits + mantissaBits; }
    std::uint32_t codeCount() const { return 1u << bits(); }
    std::uint32_t signMask() const { return signBits ? 1u << (exponentBits + mantissaBits) : 0u; }
    bool hasNan() const { return specials != MiniFloatSpecials::None; }
    bool hasInf() const { return specials == MiniFloatSpecials::IeeeInfNan; }
    bool hasSubnormals() const { return mantissaBits > 0; }
    // The magnitude code (sign bit clear) of the largest finite value; codes order like
    // their values, so every magnitude code above it is Inf or NaN. Defined here, as is
    // maxExponent(): the MX scale of every 32-element block reads them, and a call out of line
    // per block was 1% of a cnn mxfp8 step.
    std::uint32_t maxFiniteMagnitudeCode() const
    {
        const std::uint32_t allOnes = (1u << (exponentBits + mantissaBits)) - 1u;
        switch (specials) {
        case MiniFloatSpecials::None: return allOnes;
        case MiniFloatSpecials::IeeeInfNan: return allOnes - (1u << mantissaBits); // exponent all ones minus one
        case MiniFloatSpecials::AllOnesNan: return allOnes - 1u;
        case MiniFloatSpecials::UnsignedNan: return allOnes - 1u;
        }
        return allOnes;
    }
    int minExponent() const { return 1 - bias; } // exponent of the smallest normal (E8M0: of code 0)
    int maxExponent() const                      // exponent of the largest finite value
    {
        if (specials == MiniFloatSpecials::UnsignedNan)
            return static_cast<int>(maxFiniteMagnitudeCode()) - bias;
        return static_cast<int>(maxFiniteMagnitudeCode() >> mantissaBits) - bias;
    }

    float maxFinite() const;
    float minNormal() const;    // E8M0: 2^-127, its smallest value
    float minSubnormal() const; // 0 where the format has none (E8M0)
};

const MiniFloatFormat& miniFloatFormat(MiniFloat id);
std::span<const MiniFloatFormat> miniFloatFormats(); // in the order of the enum

template <>
std::span<const EnumEntry<MiniFloat>> enumEntries<MiniFloat>();

// "none", "Inf, NaN = S.11111.xx", ...: how the CLI and the docs describe the specials.
std::string_view miniFloatSpecialsText(MiniFloat id);

} // namespace mantissa
