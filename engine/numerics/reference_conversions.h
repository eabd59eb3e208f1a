#pragma once
// Scalar, branchy, obviously-correct conversions between fp32 and the 16-bit types.
// They are the oracle for the vectorised paths in conversions.cpp and are used
// directly for single values. Rounding is IEEE round-to-nearest-even everywhere.
#include <bit>
#include <cstdint>

namespace mantissa::reference {

// fp32 -> IEEE binary16. Subnormals are produced exactly, values >= 65520 become
// infinity (65520 is the tie between 65504 and 2^16 and rounds to the even side,
// which is infinity), NaNs stay NaN with their sign and top payload bits (quietened).
constexpr std::uint16_t floatToHalfBits(float value)
{
    const std::uint32_t x = std::bit_cast<std::uint32_t>(value);
    const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
    const std::uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) {
        if (absx > 0x7f800000u)
            return static_cast<std::uint16_t>(sign | 0x7e00u | ((absx >> 13) & 0x3ffu));
        return static_cast<std::uint16_t>(sign | 0x7c00u);
    }
    if (absx >= 0x477ff000u) // 65520 and above
        return static_cast<std::uint16_t>(sign | 0x7c00u);
    if (absx >= 0x38800000u) { // 2^-14 and above: a normal half
        const std::uint32_t exponent = (absx >> 23) - 127 + 15;
        std::uint32_t bits = (exponent << 10) | ((absx & 0x7fffffu) >> 13);
        const std::uint32_t rest = absx & 0x1fffu;
        if (rest > 0x1000u || (rest == 0x1000u && (bits & 1u)))
            ++bits; // a carry into the exponent is the correct result
        return static_cast<std::uint16_t>(sign | bits);
    }
    if (absx < 0x33000000u) // below 2^-25: rounds to zero (2^-25 itself ties to even zero below)
        return sign;
    // Subnormal half: count in units of 2^-24.
    const std::uint32_t exponent = absx >> 23;
    const std::uint32_t mantissa = (absx & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126 - exponent; // 14..24
    std::uint32_t bits = mantissa >> shift;
    const std::uint32_t rest = mantissa & ((1u << shift) - 1u);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (bits & 1u)))
        ++bits;
    return static_cast<std::uint16_t>(sign | bits);
}

constexpr float halfBitsToFloat(std::uint16_t h)
{
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1fu;
    std::uint32_t mantissa = h & 0x3ffu;
    if (exponent == 0x1f) // inf / NaN keep their payload
        return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
    if (exponent != 0)
        return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
    if (mantissa == 0)
        return std::bit_cast<float>(sign);
    // Subnormal half: normalise into an fp32 normal.
    std::uint32_t e = 113;
    while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --e;
    }
    return std::bit_cast<float>(sign | (e << 23) | ((mantissa & 0x3ffu) << 13));
}

// fp32 -> bfloat16: keep the top 16 bits, rounding to nearest even; overflow gives inf
// naturally because bf16 shares fp32's exponent. NaNs are quietened, never turned into inf.
constexpr std::uint16_t floatToBFloat16Bits(float value)
{
    const std::uint32_t x = std::bit_cast<std::uint32_t>(value);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return static_cast<std::uint16_t>((x >> 16) | 0x40u);
    const std::uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
    return static_cast<std::uint16_t>((x + rounding) >> 16);
}

constexpr float bfloat16BitsToFloat(std::uint16_t b)
{
    return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

} // namespace mantissa::reference
