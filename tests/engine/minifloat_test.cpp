// The sub-16-bit formats (engine/numerics/minifloat_*), exhaustively: every code of every
// format against a value computed here from its bit fields (not by the decoder), every round
// trip, every midpoint between neighbours, the overflow and underflow boundaries, the encoder
// against a brute-force nearest-value search, and stochastic rounding's bias and reproducibility.
#include "engine/numerics/minifloat_codec.h"
#include "engine/numerics/minifloat_format.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace mantissa;

namespace {

// The formats as the specifications tabulate them, written out again here so that the tests
// do not read the engine's table: OFP8 rev. 1.0 table 1, MX v1.0 tables 2 and 3 (issue 17).
struct Spec {
    MiniFloat id;
    const char* name;
    int exponentBits, mantissaBits, bias;
    double maxFinite, minNormal, minSubnormal;
    bool ieeeSpecials;   // E5M2: Inf and NaN in the all-ones exponent
    bool nanOnlyAllOnes; // E4M3: S.1111.111 is NaN, no Inf
};

const Spec kSpecs[] = {
    {MiniFloat::E4M3, "e4m3", 4, 3, 7, 448.0, 0x1p-6, 0x1p-9, false, true},
    {MiniFloat::E5M2, "e5m2", 5, 2, 15, 57344.0, 0x1p-14, 0x1p-16, true, false},
    {MiniFloat::E3M2, "e3m2", 3, 2, 3, 28.0, 0.25, 0.0625, false, false},
    {MiniFloat::E2M3, "e2m3", 2, 3, 1, 7.5, 1.0, 0.125, false, false},
    {MiniFloat::E2M1, "e2m1", 2, 1, 1, 6.0, 1.0, 0.5, false, false},
};

void PrintTo(const Spec& s, std::ostream* out) { *out << s.name; }

constexpr MiniFloatEncoding kRne{Rounding::NearestEven, OverflowRule::NonSaturating, 0};
constexpr MiniFloatEncoding kRneSaturate{Rounding::NearestEven, OverflowRule::Saturate, 0};

int codeBits(const Spec& s) { return 1 + s.exponentBits + s.mantissaBits; }
std::uint32_t signBit(const Spec& s) { return 1u << (s.exponentBits + s.mantissaBits); }
std::uint32_t magnitudeMask(const Spec& s) { return signBit(s) - 1u; }

bool expectedNan(const Spec& s, std::uint32_t code)
{
    const std::uint32_t magnitude = code & magnitudeMask(s);
    const std::uint32_t exponent = magnitude >> s.mantissaBits;
    const std::uint32_t mantissa = magnitude & ((1u << s.mantissaBits) - 1u);
    const bool exponentAllOnes = exponent == (1u << s.exponentBits) - 1u;
    if (s.ieeeSpecials)
        return exponentAllOnes && mantissa != 0;
    if (s.nanOnlyAllOnes)
        return magnitude == magnitudeMask(s);
    return false;
}

bool expectedInf(const Spec& s, std::uint32_t code)
{
    const std::uint32_t magnitude = code & magnitudeMask(s);
    return s.ieeeSpecials && magnitude == (((1u << s.exponentBits) - 1u) << s.mantissaBits);
}

// (-1)^S * 2^(E - bias) * (1 + M / 2^m), or 2^(1 - bias) * (M / 2^m) when E = 0, in double.
double expectedValue(const Spec& s, std::uint32_t code)
{
    const bool negative = (code & signBit(s)) != 0;
    const std::uint32_t magnitude = code & magnitudeMask(s);
    const double exponent = static_cast<double>(magnitude >> s.mantissaBits);
    const double fraction =
        static_cast<double>(magnitude & ((1u << s.mantissaBits) - 1u)) / std::pow(2.0, s.mantissaBits);
    const double value =
        exponent == 0 ? std::pow(2.0, 1 - s.bias) * fraction : std::pow(2.0, exponent - s.bias) * (1.0 + fraction);
    return negative ? -value : value;
}

// The finite magnitude codes in increasing order of value (codes order like values).
std::vector<std::uint32_t> finiteMagnitudes(const Spec& s)
{
    std::vector<std::uint32_t> codes;
    for (std::uint32_t c = 0; c <= magnitudeMask(s); ++c)
        if (!expectedNan(s, c) && !expectedInf(s, c))
            codes.push_back(c);
    return codes;
}

bool sameBits(float a, float b) { return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b); }

std::string hex(std::uint32_t code) { return "0x" + (std::stringstream() << std::hex << code).str(); }

// The brute-force oracle: the nearest value by search over every finite code, ties to the
// even code, with the overflow decided by the "next" value above max (max + its gap), as if
// the exponent range were unbounded (OFP8 rev. 1.0 section 5).
struct Expected {
    std::uint32_t magnitude;
    bool overflow;
};

Expected nearestBySearch(const Spec& s, double magnitude)
{
    const std::vector<std::uint32_t> codes = finiteMagnitudes(s);
    std::uint32_t best = codes.front();
    double bestDistance = std::abs(magnitude - expectedValue(s, best));
    for (std::uint32_t c : codes) {
        const double d = std::abs(magnitude - expectedValue(s, c));
        if (d < bestDistance || (d == bestDistance && (c & 1u) == 0)) {
            best = c;
            bestDistance = d;
        }
    }
    const std::uint32_t maxCode = codes.back();
    const double gap = expectedValue(s, maxCode) - expectedValue(s, maxCode - 1);
    const double beyond = expectedValue(s, maxCode) + gap;
    const double d = std::abs(magnitude - beyond);
    if (d < bestDistance || (d == bestDistance && ((maxCode + 1) & 1u) == 0))
        return {maxCode, true};
    return {best, false};
}

std::uint8_t overflowResult(const Spec& s, bool negative, OverflowRule rule)
{
    const std::uint32_t sign = negative ? signBit(s) : 0u;
    const std::uint32_t maxCode = finiteMagnitudes(s).back();
    if (rule == OverflowRule::Saturate || (!s.ieeeSpecials && !s.nanOnlyAllOnes))
        return static_cast<std::uint8_t>(sign | maxCode);
    if (s.ieeeSpecials)
        return static_cast<std::uint8_t>(sign | (((1u << s.exponentBits) - 1u) << s.mantissaBits));
    return static_cast<std::uint8_t>(sign | magnitudeMask(s));
}

class EveryFormat : public ::testing::TestWithParam<Spec> {};

std::string specName(const ::testing::TestParamInfo<Spec>& info) { return info.param.name; }

} // namespace

TEST(MiniFloatFormats, TableMatchesTheSpecifications)
{
    for (const Spec& s : kSpecs) {
        const MiniFloatFormat& f = miniFloatFormat(s.id);
        SCOPED_TRACE(s.name);
        EXPECT_EQ(f.bits(), codeBits(s));
        EXPECT_EQ(f.exponentBits, s.exponentBits);
        EXPECT_EQ(f.mantissaBits, s.mantissaBits);
        EXPECT_EQ(f.bias, s.bias);
        EXPECT_EQ(f.maxFinite(), s.maxFinite);
        EXPECT_EQ(f.minNormal(), s.minNormal);
        EXPECT_EQ(f.minSubnormal(), s.minSubnormal);
        EXPECT_EQ(enumKey(s.id), s.name);
        EXPECT_EQ(parseEnum<MiniFloat>(s.name), s.id);
    }
    const MiniFloatFormat& e8m0 = miniFloatFormat(MiniFloat::E8M0);
    EXPECT_EQ(e8m0.bits(), 8);
    EXPECT_EQ(e8m0.maxFinite(), 0x1p127f);
    EXPECT_EQ(e8m0.minNormal(), 0x1p-127f);
    EXPECT_EQ(e8m0.minSubnormal(), 0.0f);
    EXPECT_EQ(miniFloatFormats().size(), 6u);
}

TEST_P(EveryFormat, EveryCodeDecodesToItsFieldValue)
{
    const Spec s = GetParam();
    for (std::uint32_t code = 0; code < (1u << codeBits(s)); ++code) {
        const float decoded = decodeMiniFloat(static_cast<std::uint8_t>(code), s.id);
        const bool negative = (code & signBit(s)) != 0;
        EXPECT_EQ(isMiniFloatNan(static_cast<std::uint8_t>(code), s.id), expectedNan(s, code)) << hex(code);
        EXPECT_EQ(isMiniFloatInf(static_cast<std::uint8_t>(code), s.id), expectedInf(s, code)) << hex(code);
        if (expectedNan(s, code)) {
            EXPECT_TRUE(std::isnan(decoded)) << hex(code);
        } else if (expectedInf(s, code)) {
            EXPECT_EQ(decoded, negative ? -INFINITY : INFINITY) << hex(code);
        } else {
            EXPECT_EQ(static_cast<double>(decoded), expectedValue(s, code)) << hex(code);
            EXPECT_EQ(std::signbit(decoded), negative) << hex(code) << ": the sign of zero too";
        }
    }
}

TEST(MiniFloatFormats, KnownValues)
{
    const float e2m1[] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    for (std::uint8_t code = 0; code < 8; ++code) {
        EXPECT_EQ(decodeMiniFloat(code, MiniFloat::E2M1), e2m1[code]);
        EXPECT_EQ(decodeMiniFloat(static_cast<std::uint8_t>(code | 8), MiniFloat::E2M1), -e2m1[code]);
    }
    EXPECT_EQ(decodeMiniFloat(0x7e, MiniFloat::E4M3), 448.0f);
    EXPECT_EQ(decodeMiniFloat(0x01, MiniFloat::E4M3), 0x1p-9f);
    EXPECT_TRUE(std::isnan(decodeMiniFloat(0x7f, MiniFloat::E4M3)));
    EXPECT_TRUE(std::isnan(decodeMiniFloat(0xff, MiniFloat::E4M3)));
    EXPECT_EQ(decodeMiniFloat(0x78, MiniFloat::E4M3), 256.0f); // the all-ones exponent holds numbers
    EXPECT_EQ(decodeMiniFloat(0x7b, MiniFloat::E5M2), 57344.0f);
    EXPECT_EQ(decodeMiniFloat(0x7c, MiniFloat::E5M2), INFINITY);
    EXPECT_EQ(decodeMiniFloat(0xfc, MiniFloat::E5M2), -INFINITY);
    EXPECT_EQ(decodeMiniFloat(0x1f, MiniFloat::E3M2), 28.0f);
    EXPECT_EQ(decodeMiniFloat(0x1f, MiniFloat::E2M3), 7.5f);
    EXPECT_EQ(decodeMiniFloat(0x3f, MiniFloat::E2M3), -7.5f);
}

TEST(MiniFloatFormats, E8M0EveryCode)
{
    for (std::uint32_t code = 0; code < 255; ++code) {
        EXPECT_EQ(static_cast<double>(decodeMiniFloat(static_cast<std::uint8_t>(code), MiniFloat::E8M0)),
                  std::pow(2.0, static_cast<int>(code) - 127))
            << code;
        EXPECT_EQ(encodeMiniFloat(decodeMiniFloat(static_cast<std::uint8_t>(code), MiniFloat::E8M0), MiniFloat::E8M0),
                  code);
    }
    EXPECT_TRUE(std::isnan(decodeMiniFloat(0xff, MiniFloat::E8M0)));
    EXPECT_TRUE(isMiniFloatNan(0xff, MiniFloat::E8M0));
    EXPECT_FALSE(isMiniFloatNan(0xfe, MiniFloat::E8M0));
}

TEST(MiniFloatFormats, E8M0Rounding)
{
    const auto e8m0 = [](float v, const MiniFloatEncoding& e = kRne) { return encodeMiniFloat(v, MiniFloat::E8M0, e); };
    EXPECT_EQ(e8m0(1.0f), 127);
    EXPECT_EQ(e8m0(1.5f), 128); // tie between codes 127 and 128: even
    EXPECT_EQ(e8m0(3.0f), 128); // tie between codes 128 and 129: even
    EXPECT_EQ(e8m0(std::nextafter(3.0f, 4.0f)), 129);
    EXPECT_EQ(e8m0(std::nextafter(1.5f, 1.0f)), 127);
    EXPECT_EQ(e8m0(0.0f), 0); // no zero: the smallest value
    EXPECT_EQ(e8m0(-0.0f), 0);
    EXPECT_EQ(e8m0(0x1p-127f), 0);
    EXPECT_EQ(e8m0(0x1p-140f), 0);
    EXPECT_EQ(e8m0(std::numeric_limits<float>::denorm_min()), 0);
    EXPECT_EQ(e8m0(0x1.8p-127f), 0); // tie between codes 0 and 1: even
    EXPECT_EQ(e8m0(0x1.9p-127f), 1); // an fp32 subnormal just above it
    EXPECT_EQ(e8m0(-1.0f), 0xff);    // no sign: NaN
    EXPECT_EQ(e8m0(NAN), 0xff);
    EXPECT_EQ(e8m0(0x1p127f), 0xfe);
    EXPECT_EQ(e8m0(0x1.8p127f), 0xfe); // tie between 254 (even) and the beyond
    EXPECT_EQ(e8m0(0x1.9p127f), 0xff); // overflow: NaN
    EXPECT_EQ(e8m0(0x1.9p127f, kRneSaturate), 0xfe);
    EXPECT_EQ(e8m0(INFINITY), 0xff);
    EXPECT_EQ(e8m0(INFINITY, kRneSaturate), 0xfe);
}

TEST_P(EveryFormat, EveryCodeRoundTrips)
{
    const Spec s = GetParam();
    const MiniFloatEncoding encodings[] = {kRne,
                                           kRneSaturate,
                                           {Rounding::Stochastic, OverflowRule::NonSaturating, 7},
                                           {Rounding::Stochastic, OverflowRule::Saturate, 8}};
    for (const MiniFloatEncoding& encoding : encodings) {
        for (std::uint32_t code = 0; code < (1u << codeBits(s)); ++code) {
            const float value = decodeMiniFloat(static_cast<std::uint8_t>(code), s.id);
            const std::uint8_t back = encodeMiniFloat(value, s.id, encoding, code);
            if (expectedNan(s, code)) {
                // Every NaN comes back as the canonical NaN, all ones, with its sign.
                EXPECT_EQ(back, (code & signBit(s)) | magnitudeMask(s)) << hex(code);
            } else if (expectedInf(s, code) && encoding.overflow == OverflowRule::Saturate) {
                EXPECT_EQ(back, (code & signBit(s)) | finiteMagnitudes(s).back()) << hex(code);
            } else {
                EXPECT_EQ(back, code) << hex(code) << " = " << value;
            }
        }
    }
}

TEST_P(EveryFormat, EveryMidpointRoundsToEven)
{
    const Spec s = GetParam();
    const std::vector<std::uint32_t> codes = finiteMagnitudes(s);
    for (std::size_t i = 0; i + 1 < codes.size(); ++i) {
        const float lo = decodeMiniFloat(static_cast<std::uint8_t>(codes[i]), s.id);
        const float hi = decodeMiniFloat(static_cast<std::uint8_t>(codes[i + 1]), s.id);
        const float mid = (lo + hi) / 2; // exact: both are short binary fractions
        const std::uint32_t even = (codes[i] & 1u) == 0 ? codes[i] : codes[i + 1];
        for (const bool negative : {false, true}) {
            const float sign = negative ? -1.0f : 1.0f;
            const std::uint32_t signCode = negative ? signBit(s) : 0u;
            EXPECT_EQ(encodeMiniFloat(sign * mid, s.id, kRne), signCode | even) << "midpoint " << sign * mid;
            EXPECT_EQ(encodeMiniFloat(sign * std::nextafter(mid, lo), s.id, kRne), signCode | codes[i])
                << "below the midpoint " << sign * mid;
            EXPECT_EQ(encodeMiniFloat(sign * std::nextafter(mid, hi), s.id, kRne), signCode | codes[i + 1])
                << "above the midpoint " << sign * mid;
        }
    }
}

TEST_P(EveryFormat, OverflowBoundaries)
{
    const Spec s = GetParam();
    const std::uint32_t maxCode = finiteMagnitudes(s).back();
    const float max = static_cast<float>(s.maxFinite);
    const float gap = max - decodeMiniFloat(static_cast<std::uint8_t>(maxCode - 1), s.id);
    const float tie = max + gap / 2; // between max and the value the next code would have
    for (const bool negative : {false, true}) {
        const float sign = negative ? -1.0f : 1.0f;
        const std::uint32_t signCode = negative ? signBit(s) : 0u;
        for (const OverflowRule rule : {OverflowRule::NonSaturating, OverflowRule::Saturate}) {
            const MiniFloatEncoding e{Rounding::NearestEven, rule, 0};
            const std::uint8_t overflowed = overflowResult(s, negative, rule);
            EXPECT_EQ(encodeMiniFloat(sign * max, s.id, e), signCode | maxCode);
            EXPECT_EQ(encodeMiniFloat(sign * std::nextafter(max, 2 * max), s.id, e), signCode | maxCode);
            EXPECT_EQ(encodeMiniFloat(sign * std::nextafter(tie, 0.0f), s.id, e), signCode | maxCode);
            // The tie goes to the even side: max when its code is even (E4M3: 464 -> 448),
            // else to the value beyond, which overflows (E5M2: 61440 -> Inf).
            EXPECT_EQ(encodeMiniFloat(sign * tie, s.id, e), (maxCode & 1u) == 0 ? signCode | maxCode : overflowed)
                << "tie " << sign * tie;
            EXPECT_EQ(encodeMiniFloat(sign * std::nextafter(tie, 2 * tie), s.id, e), overflowed);
            EXPECT_EQ(encodeMiniFloat(sign * 1e30f, s.id, e), overflowed);
            EXPECT_EQ(encodeMiniFloat(sign * std::numeric_limits<float>::max(), s.id, e), overflowed);
            EXPECT_EQ(encodeMiniFloat(sign * INFINITY, s.id, e), overflowed);
            const auto detailed = encodeMiniFloatWith(sign * INFINITY, s.id, Rounding::NearestEven, rule, 0);
            EXPECT_TRUE(detailed.overflowed);
            EXPECT_FALSE(encodeMiniFloatWith(sign * max, s.id, Rounding::NearestEven, rule, 0).overflowed);
        }
    }
}

TEST(MiniFloatFormats, TheIssueExamples)
{
    EXPECT_EQ(encodeMiniFloat(449.0f, MiniFloat::E4M3, kRne), 0x7e); // rounds to 448: no overflow
    EXPECT_EQ(encodeMiniFloat(464.0f, MiniFloat::E4M3, kRne), 0x7e); // the tie: even
    EXPECT_TRUE(isMiniFloatNan(encodeMiniFloat(465.0f, MiniFloat::E4M3, kRne), MiniFloat::E4M3));
    EXPECT_EQ(encodeMiniFloat(465.0f, MiniFloat::E4M3, kRneSaturate), 0x7e);
    EXPECT_EQ(encodeMiniFloat(61440.0f, MiniFloat::E5M2, kRne), 0x7c); // Inf
    EXPECT_EQ(encodeMiniFloat(61439.0f, MiniFloat::E5M2, kRne), 0x7b);
    EXPECT_EQ(encodeMiniFloat(7.0f, MiniFloat::E2M1, kRne), 0x7);  // saturates: no Inf
    EXPECT_EQ(encodeMiniFloat(5.0f, MiniFloat::E2M1, kRne), 0x6);  // tie 4 | 6: even (4)
    EXPECT_EQ(encodeMiniFloat(2.5f, MiniFloat::E2M1, kRne), 0x4);  // tie 2 | 3: even (2)
    EXPECT_EQ(encodeMiniFloat(0.25f, MiniFloat::E2M1, kRne), 0x0); // tie 0 | 0.5: even (0)
}

TEST_P(EveryFormat, UnderflowBoundaries)
{
    const Spec s = GetParam();
    const float minSub = static_cast<float>(s.minSubnormal);
    for (const bool negative : {false, true}) {
        const float sign = negative ? -1.0f : 1.0f;
        const std::uint32_t signCode = negative ? signBit(s) : 0u;
        EXPECT_EQ(encodeMiniFloat(sign * minSub, s.id, kRne), signCode | 1u);
        EXPECT_EQ(encodeMiniFloat(sign * minSub / 2, s.id, kRne), signCode) << "half of min subnormal: tie to zero";
        EXPECT_EQ(encodeMiniFloat(sign * std::nextafter(minSub / 2, minSub), s.id, kRne), signCode | 1u);
        EXPECT_EQ(encodeMiniFloat(sign * std::nextafter(minSub / 2, 0.0f), s.id, kRne), signCode);
        EXPECT_EQ(encodeMiniFloat(sign * minSub * 1.5f, s.id, kRne), signCode | 2u) << "1.5 min subnormal: even (2)";
        EXPECT_EQ(encodeMiniFloat(sign * std::numeric_limits<float>::denorm_min(), s.id, kRne), signCode);
        EXPECT_EQ(encodeMiniFloat(sign * 0.0f, s.id, kRne), signCode) << "zero keeps its sign";
        // The largest subnormal and the smallest normal are neighbours.
        const float minNormal = static_cast<float>(s.minNormal);
        const std::uint32_t minNormalCode = 1u << s.mantissaBits;
        EXPECT_EQ(encodeMiniFloat(sign * minNormal, s.id, kRne), signCode | minNormalCode);
        EXPECT_EQ(encodeMiniFloat(sign * (minNormal - minSub), s.id, kRne), signCode | (minNormalCode - 1u));
    }
}

TEST_P(EveryFormat, NanAndInfInputs)
{
    const Spec s = GetParam();
    const std::uint32_t maxCode = finiteMagnitudes(s).back();
    for (const OverflowRule rule : {OverflowRule::NonSaturating, OverflowRule::Saturate}) {
        const MiniFloatEncoding e{Rounding::NearestEven, rule, 0};
        const std::uint8_t nan = encodeMiniFloat(NAN, s.id, e);
        const std::uint8_t negativeNan = encodeMiniFloat(-NAN, s.id, e);
        if (s.ieeeSpecials || s.nanOnlyAllOnes) {
            EXPECT_TRUE(expectedNan(s, nan)) << "NaN stays NaN";
            EXPECT_TRUE(expectedNan(s, negativeNan));
            EXPECT_EQ(negativeNan & signBit(s), signBit(s)) << "with its sign";
        } else {
            EXPECT_EQ(nan, maxCode) << "no NaN code: +max";
            EXPECT_EQ(negativeNan, maxCode);
        }
    }
}

// The encoder against a search over every code, for random fp32 values of every scale the
// format can meet: 2^-30 .. 2^20, both signs, plus a band around every code.
TEST_P(EveryFormat, EncoderMatchesBruteForceSearch)
{
    const Spec s = GetParam();
    std::mt19937 rng(17);
    std::uniform_real_distribution<float> exponent(-30.0f, 20.0f);
    std::uniform_int_distribution<std::uint32_t> mantissa(0, 0x7fffff);
    std::vector<float> values;
    for (int i = 0; i < 20000; ++i) {
        const float magnitude = std::ldexp(1.0f + static_cast<float>(mantissa(rng)) * 0x1p-23f,
                                           static_cast<int>(std::floor(exponent(rng))));
        values.push_back((i & 1) ? -magnitude : magnitude);
    }
    for (std::uint32_t c : finiteMagnitudes(s)) {
        const float v = static_cast<float>(expectedValue(s, c));
        for (const float x : {v, std::nextafter(v, 0.0f), std::nextafter(v, INFINITY), v * 1.01f, v * 0.99f})
            values.push_back(x);
    }
    int mismatches = 0;
    for (const float x : values) {
        const Expected want = nearestBySearch(s, std::abs(static_cast<double>(x)));
        for (const OverflowRule rule : {OverflowRule::NonSaturating, OverflowRule::Saturate}) {
            const std::uint32_t signCode = std::signbit(x) ? signBit(s) : 0u;
            const std::uint8_t expected =
                want.overflow ? overflowResult(s, std::signbit(x), rule) : signCode | want.magnitude;
            const std::uint8_t got = encodeMiniFloat(x, s.id, {Rounding::NearestEven, rule, 0});
            if (got != expected && ++mismatches <= 10)
                ADD_FAILURE() << x << ": encoded " << hex(got) << ", nearest by search " << hex(expected);
        }
    }
    EXPECT_EQ(mismatches, 0);
}

// Stochastic rounding: only the two neighbours come out, each as often as its closeness says
// (the mean error is within 5 standard errors of zero), in every binade and the subnormals.
TEST_P(EveryFormat, StochasticRoundingIsUnbiased)
{
    const Spec s = GetParam();
    const std::vector<std::uint32_t> codes = finiteMagnitudes(s);
    const MiniFloatEncoding sr{Rounding::Stochastic, OverflowRule::Saturate, 2024};
    constexpr int kDraws = 20000;
    for (std::size_t i = 0; i + 1 < codes.size(); i += 3) {
        const double lo = expectedValue(s, codes[i]);
        const double hi = expectedValue(s, codes[i + 1]);
        for (const double p : {0.1, 0.37, 0.5, 0.9}) {
            const float x = static_cast<float>(lo + p * (hi - lo));
            const double pExact = (static_cast<double>(x) - lo) / (hi - lo);
            std::vector<float> in(kDraws, x);
            std::vector<std::uint8_t> out(kDraws);
            encodeMiniFloats(in, out, s.id, sr, 1000 * i);
            double sum = 0;
            int ups = 0;
            for (std::uint8_t code : out) {
                ASSERT_TRUE(code == codes[i] || code == codes[i + 1]) << hex(code) << " for " << x;
                ups += code == codes[i + 1];
                sum += decodeMiniFloat(code, s.id);
            }
            const double meanError = sum / kDraws - x;
            const double standardError = (hi - lo) * std::sqrt(pExact * (1 - pExact) / kDraws);
            EXPECT_LT(std::abs(meanError), 5 * standardError)
                << x << " between " << lo << " and " << hi << ": rounded up " << ups << " of " << kDraws;
        }
    }
}

// The draw decides exactly: with all-zero random bits any discarded part rounds up and an
// exact value stays; with all-one bits even the largest part short of the gap rounds down
// (P(up) = part / gap < 1), and half-way bits round up any part above half of the gap.
TEST_P(EveryFormat, StochasticRoundingComparesTheDiscardedBits)
{
    const Spec s = GetParam();
    for (std::uint32_t c : finiteMagnitudes(s)) {
        if (c == finiteMagnitudes(s).back())
            continue;
        const float v = static_cast<float>(expectedValue(s, c));
        const float next = static_cast<float>(expectedValue(s, c + 1));
        const auto sr = [&](float x, std::uint64_t bits) {
            return encodeMiniFloatWith(x, s.id, Rounding::Stochastic, OverflowRule::Saturate, bits).code;
        };
        EXPECT_EQ(sr(v, 0), c) << "an exact value never moves: " << v;
        EXPECT_EQ(sr(v, ~0ull), c) << v;
        // Above zero the fp32 ulp is far below the format's gap; at zero the smallest excess
        // (2^-149) has a probability below 2^-64, which the 64-bit draw rounds to nothing.
        if (v != 0.0f) {
            EXPECT_EQ(sr(std::nextafter(v, next), 0), c + 1) << "smallest excess, smallest draw: " << v;
        }
        EXPECT_EQ(sr(std::nextafter(v, next), ~0ull), c) << "smallest excess, largest draw: " << v;
        EXPECT_EQ(sr(std::nextafter(next, v), ~0ull), c) << "largest excess, largest draw: " << next;
        EXPECT_EQ(sr(std::nextafter(next, v), 1ull << 63), c + 1) << "largest excess, middle draw: " << next;
    }
}

TEST(MiniFloatStochastic, ReproducibleAndIndependentOfThreads)
{
    // Big enough for the parallel path (chunks of 2^16 across threads).
    std::vector<float> values(300000);
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (float& v : values)
        v = normal(rng);
    const MiniFloatEncoding sr{Rounding::Stochastic, OverflowRule::Saturate, 99};
    std::vector<std::uint8_t> first(values.size()), second(values.size());
    encodeMiniFloats(values, first, MiniFloat::E2M1, sr, 0);
    encodeMiniFloats(values, second, MiniFloat::E2M1, sr, 0);
    EXPECT_EQ(first, second) << "same seed, same codes";
    for (std::size_t i = 0; i < values.size(); i += 997)
        ASSERT_EQ(first[i], encodeMiniFloat(values[i], MiniFloat::E2M1, sr, i)) << "element " << i;
    // A span that starts at element 1000 with firstCounter 1000 draws what the whole one did.
    std::vector<std::uint8_t> tail(values.size() - 1000);
    encodeMiniFloats(std::span(values).subspan(1000), tail, MiniFloat::E2M1, sr, 1000);
    EXPECT_TRUE(std::equal(tail.begin(), tail.end(), first.begin() + 1000));
    std::vector<std::uint8_t> otherSeed(values.size());
    encodeMiniFloats(values, otherSeed, MiniFloat::E2M1, {Rounding::Stochastic, OverflowRule::Saturate, 100}, 0);
    std::size_t differing = 0;
    for (std::size_t i = 0; i < values.size(); ++i)
        differing += otherSeed[i] != first[i];
    EXPECT_GT(differing, values.size() / 20) << "another seed draws differently";
}

TEST(MiniFloatSpans, MatchScalarConversions)
{
    std::vector<float> values;
    for (std::uint32_t bits = 0; bits < 0x80000000u; bits += 0x00012345u) {
        values.push_back(std::bit_cast<float>(bits));
        values.push_back(-std::bit_cast<float>(bits));
    }
    for (const MiniFloatFormat& f : miniFloatFormats()) {
        std::vector<std::uint8_t> codes(values.size());
        encodeMiniFloats(values, codes, f.id, kRne);
        std::vector<float> decoded(values.size());
        decodeMiniFloats(codes, decoded, f.id);
        std::vector<float> rounded = values;
        roundThroughMiniFloat(rounded, f.id, kRne);
        for (std::size_t i = 0; i < values.size(); ++i) {
            ASSERT_EQ(codes[i], encodeMiniFloat(values[i], f.id, kRne)) << enumKey(f.id) << " " << values[i];
            ASSERT_TRUE(sameBits(decoded[i], decodeMiniFloat(codes[i], f.id)) ||
                        (std::isnan(decoded[i]) && std::isnan(decodeMiniFloat(codes[i], f.id))));
            ASSERT_TRUE(sameBits(rounded[i], decoded[i]) || (std::isnan(rounded[i]) && std::isnan(decoded[i])));
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Formats, EveryFormat, ::testing::ValuesIn(kSpecs), specName);
