#include "engine/numerics/minifloat_format.h"

#include <array>
#include <cmath>

namespace mantissa {

namespace {

using Specials = MiniFloatSpecials;

// Sign/exponent/mantissa bits and bias as the OCP specifications define them (OFP8 rev. 1.0
// table 1; MX v1.0 tables 2 and 3).
constexpr std::array<MiniFloatFormat, 6> kFormats = {{
    {MiniFloat::E4M3, 1, 4, 3, 7, Specials::AllOnesNan},
    {MiniFloat::E5M2, 1, 5, 2, 15, Specials::IeeeInfNan},
    {MiniFloat::E3M2, 1, 3, 2, 3, Specials::None},
    {MiniFloat::E2M3, 1, 2, 3, 1, Specials::None},
    {MiniFloat::E2M1, 1, 2, 1, 1, Specials::None},
    {MiniFloat::E8M0, 0, 8, 0, 127, Specials::UnsignedNan},
}};

// miniFloatFormat() indexes the table by the enum.
constexpr bool inEnumOrder()
{
    for (std::size_t i = 0; i < kFormats.size(); ++i)
        if (static_cast<std::size_t>(kFormats[i].id) != i)
            return false;
    return true;
}
static_assert(inEnumOrder());

constexpr EnumEntry<MiniFloat> kEntries[] = {
    {MiniFloat::E4M3, "e4m3", "FP8 E4M3", "8 bits, OCP \"fn\": 3 mantissa bits, range to 448, no Inf"},
    {MiniFloat::E5M2, "e5m2", "FP8 E5M2", "8 bits, IEEE-like: 2 mantissa bits, range to 57344, Inf and NaN"},
    {MiniFloat::E3M2, "e3m2", "FP6 E3M2", "6 bits (MX): range to 28, no Inf or NaN"},
    {MiniFloat::E2M3, "e2m3", "FP6 E2M3", "6 bits (MX): range to 7.5, no Inf or NaN"},
    {MiniFloat::E2M1, "e2m1", "FP4 E2M1", "4 bits (MX, NVFP4): 0, 0.5, 1, 1.5, 2, 3, 4, 6"},
    {MiniFloat::E8M0, "e8m0", "E8M0 scale", "8-bit power of two 2^-127..2^127, the MX block scale; 0xFF = NaN"},
};

// The value of a magnitude code (sign bit clear) from its fields, in double so that it is exact.
double magnitudeValue(const MiniFloatFormat& f, std::uint32_t code)
{
    if (f.specials == Specials::UnsignedNan)
        return std::ldexp(1.0, static_cast<int>(code) - f.bias);
    const std::uint32_t exponent = code >> f.mantissaBits;
    const std::uint32_t mantissa = code & ((1u << f.mantissaBits) - 1u);
    if (exponent == 0)
        return std::ldexp(static_cast<double>(mantissa), f.minExponent() - f.mantissaBits);
    return std::ldexp(static_cast<double>((1u << f.mantissaBits) + mantissa),
                      static_cast<int>(exponent) - f.bias - f.mantissaBits);
}

} // namespace

float MiniFloatFormat::maxFinite() const { return static_cast<float>(magnitudeValue(*this, maxFiniteMagnitudeCode())); }

float MiniFloatFormat::minNormal() const
{
    return specials == Specials::UnsignedNan ? static_cast<float>(magnitudeValue(*this, 0))
                                             : static_cast<float>(std::ldexp(1.0, minExponent()));
}

float MiniFloatFormat::minSubnormal() const
{
    return hasSubnormals() ? static_cast<float>(magnitudeValue(*this, 1)) : 0.0f;
}

const MiniFloatFormat& miniFloatFormat(MiniFloat id) { return kFormats[static_cast<std::size_t>(id)]; }

std::span<const MiniFloatFormat> miniFloatFormats() { return kFormats; }

template <>
std::span<const EnumEntry<MiniFloat>> enumEntries<MiniFloat>()
{
    return kEntries;
}

std::string_view miniFloatSpecialsText(MiniFloat id)
{
    switch (id) {
    case MiniFloat::E4M3: return "no Inf; NaN = S.1111.111";
    case MiniFloat::E5M2: return "Inf = S.11111.00, NaN = S.11111.{01,10,11}";
    case MiniFloat::E3M2:
    case MiniFloat::E2M3:
    case MiniFloat::E2M1: return "none";
    case MiniFloat::E8M0: return "no sign, no zero; NaN = 0xFF";
    }
    return "?";
}

} // namespace mantissa
