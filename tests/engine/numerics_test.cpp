// Bit-exactness of the fp32 <-> fp16/bf16 conversions: the vector paths against the
// scalar reference, the reference against the IEEE boundary values, all 65,536 halves.
#include "engine/numerics/conversions.h"
#include "engine/numerics/conversions_avx512.h"
#include "engine/numerics/reference_conversions.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

using namespace mantissa;

namespace {

// The conversion paths this CPU has: the AVX-512 loops where it has AVX-512, and the AVX2
// loops, which such a CPU would otherwise never run here.
std::vector<bool> avx512Settings()
{
    if (avx512::hasAvx512())
        return {true, false};
    return {false};
}

const char* pathName(bool avx512) { return avx512 ? " (AVX-512)" : " (AVX2)"; }

struct Avx512ConversionsAllowed {
    explicit Avx512ConversionsAllowed(bool allowed) : previous(allowAvx512Conversions(allowed)) {}
    ~Avx512ConversionsAllowed() { allowAvx512Conversions(previous); }
    bool previous;
};

std::uint16_t vectorHalf(float f)
{
    // Pad to a full vector so the vector path (not the scalar tail) converts the value.
    std::vector<float> in(16, f);
    std::vector<std::uint16_t> out(16);
    floatToHalf(in.data(), out.data(), 16);
    return out[3];
}

bool sameFloatBits(float a, float b) { return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b); }

} // namespace

TEST(Numerics, BuildUsesVectorPaths)
{
#if defined(__F16C__)
    EXPECT_TRUE(conversionsAreVectorised());
#else
    GTEST_SKIP() << "built without F16C (MANTISSA_SIMD=OFF): only the scalar reference runs";
#endif
}

TEST(Numerics, HalfBoundaryValues)
{
    using reference::floatToHalfBits;
    EXPECT_EQ(floatToHalfBits(65504.0f), 0x7bff);  // max finite
    EXPECT_EQ(floatToHalfBits(65519.99f), 0x7bff); // below the tie: stays finite
    EXPECT_EQ(floatToHalfBits(65520.0f), 0x7c00);  // the tie rounds to even: inf
    EXPECT_EQ(floatToHalfBits(-65520.0f), 0xfc00);
    EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -14)), 0x0400);        // min normal
    EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -24)), 0x0001);        // min subnormal
    EXPECT_EQ(floatToHalfBits(std::ldexp(1.0f, -25)), 0x0000);        // tie between 0 and 2^-24: even is 0
    EXPECT_EQ(floatToHalfBits(std::ldexp(1.5f, -25)), 0x0001);        // above the tie: rounds up
    EXPECT_EQ(floatToHalfBits(-std::ldexp(1.0f, -26)), 0x8000);       // underflow keeps the sign
    EXPECT_EQ(floatToHalfBits(std::ldexp(3.0f, -25)), 0x0002);        // 1.5 ulp ties to even (2)
    EXPECT_EQ(floatToHalfBits(1.0f + std::ldexp(1.0f, -11)), 0x3c00); // tie at 1 + half ulp: even
    EXPECT_EQ(floatToHalfBits(std::numeric_limits<float>::infinity()), 0x7c00);
    const std::uint16_t nan = floatToHalfBits(std::numeric_limits<float>::quiet_NaN());
    EXPECT_EQ(nan & 0x7c00, 0x7c00);
    EXPECT_NE(nan & 0x03ff, 0);
    EXPECT_EQ(reference::halfBitsToFloat(0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(reference::halfBitsToFloat(0x7bff), 65504.0f);
    EXPECT_EQ(reference::halfBitsToFloat(0x03ff), std::ldexp(1023.0f, -24)); // largest subnormal
}

TEST(Numerics, VectorMatchesReferenceOnBoundaries)
{
    const float values[] = {65504.0f,
                            65519.0f,
                            65520.0f,
                            65536.0f,
                            1e9f,
                            std::ldexp(1.0f, -14),
                            std::ldexp(1.0f, -24),
                            std::ldexp(1.0f, -25),
                            std::ldexp(1.0f, -26),
                            std::ldexp(1.5f, -25),
                            0.0f,
                            -0.0f,
                            1.0f / 3.0f,
                            -2.5e-6f,
                            std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::denorm_min()};
    for (const bool avx512 : avx512Settings()) {
        const Avx512ConversionsAllowed allowed(avx512);
        for (float v : values)
            EXPECT_EQ(vectorHalf(v), reference::floatToHalfBits(v)) << "value " << v << pathName(avx512);
    }
}

TEST(Numerics, AllHalvesRoundTripThroughBothPaths)
{
    std::vector<std::uint16_t> halves(65536);
    for (std::uint32_t i = 0; i < 65536; ++i)
        halves[i] = static_cast<std::uint16_t>(i);
    for (const bool avx512 : avx512Settings()) {
        const Avx512ConversionsAllowed allowed(avx512);
        std::vector<float> widened(65536);
        halfToFloat(halves.data(), widened.data(), halves.size());
        std::vector<std::uint16_t> narrowed(65536);
        floatToHalf(widened.data(), narrowed.data(), widened.size());
        int mismatches = 0;
        for (std::uint32_t i = 0; i < 65536 && mismatches < 10; ++i) {
            const float ref = reference::halfBitsToFloat(halves[i]);
            if (!sameFloatBits(widened[i], ref) && !(std::isnan(ref) && std::isnan(widened[i]))) {
                ADD_FAILURE() << "widen 0x" << std::hex << i << ": vector " << widened[i] << " reference " << ref
                              << pathName(avx512);
                ++mismatches;
            }
            const bool isNan = (i & 0x7c00) == 0x7c00 && (i & 0x3ff) != 0;
            // Every non-NaN half survives the round trip exactly; NaNs come back quiet with their payload.
            const std::uint16_t expected =
                isNan ? static_cast<std::uint16_t>(i | 0x200) : static_cast<std::uint16_t>(i);
            if (narrowed[i] != expected || reference::floatToHalfBits(ref) != expected) {
                ADD_FAILURE() << "narrow 0x" << std::hex << i << ": vector 0x" << narrowed[i] << " reference 0x"
                              << reference::floatToHalfBits(ref) << pathName(avx512);
                ++mismatches;
            }
        }
    }
}

// Midpoints between adjacent halves (and one ulp of fp32 either side) are where rounding
// bugs live: check every one of them, vector against reference.
TEST(Numerics, AllHalfMidpointsRoundToNearestEven)
{
    std::vector<float> inputs;
    for (std::uint32_t i = 0; i < 0x7c00; ++i) {
        const float lo = reference::halfBitsToFloat(static_cast<std::uint16_t>(i));
        const float hi = reference::halfBitsToFloat(static_cast<std::uint16_t>(i + 1));
        const float mid = lo + (hi - lo) * 0.5f; // exact in fp32
        for (float v : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
            inputs.push_back(v);
            inputs.push_back(-v);
        }
    }
    for (const bool avx512 : avx512Settings()) {
        const Avx512ConversionsAllowed allowed(avx512);
        std::vector<std::uint16_t> out(inputs.size());
        floatToHalf(inputs.data(), out.data(), inputs.size());
        int mismatches = 0;
        for (std::size_t i = 0; i < inputs.size() && mismatches < 10; ++i) {
            if (out[i] != reference::floatToHalfBits(inputs[i])) {
                ADD_FAILURE() << "value " << inputs[i] << " vector 0x" << std::hex << out[i] << " reference 0x"
                              << reference::floatToHalfBits(inputs[i]) << pathName(avx512);
                ++mismatches;
            }
        }
    }
}

TEST(Numerics, StridedSweepOfAllFloatsMatchesReference)
{
    // Every 4099th fp32 bit pattern (about a million values covering every exponent).
    std::vector<float> inputs;
    for (std::uint64_t bits = 0; bits <= 0xffffffffu; bits += 4099)
        inputs.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(bits)));
    int mismatches = 0;
    for (const bool avx512 : avx512Settings()) {
        const Avx512ConversionsAllowed allowed(avx512);
        ASSERT_EQ(conversionsUseAvx512(), avx512);
        std::vector<std::uint16_t> half(inputs.size()), bf(inputs.size());
        floatToHalf(inputs.data(), half.data(), inputs.size());
        floatToBFloat16(inputs.data(), bf.data(), inputs.size());
        for (std::size_t i = 0; i < inputs.size() && mismatches < 10; ++i) {
            if (half[i] != reference::floatToHalfBits(inputs[i])) {
                ADD_FAILURE() << "fp16 of bits 0x" << std::hex << std::bit_cast<std::uint32_t>(inputs[i])
                              << pathName(avx512);
                ++mismatches;
            }
            if (bf[i] != reference::floatToBFloat16Bits(inputs[i])) {
                ADD_FAILURE() << "bf16 of bits 0x" << std::hex << std::bit_cast<std::uint32_t>(inputs[i])
                              << pathName(avx512);
                ++mismatches;
            }
        }
    }
}

// Every fp32 subnormal, both signs, mixed into vectors with normal values: the bf16 instruction
// reads subnormals as zero, so these are the values its path must repair lane by lane (the
// largest round up to bf16's smallest normal, 2^-126).
TEST(Numerics, AllFloatSubnormalsRoundToBFloat16AsTheReference)
{
    std::vector<float> inputs;
    for (std::uint32_t bits = 1; bits < 0x00800000u; ++bits) {
        inputs.push_back(std::bit_cast<float>(bits));
        inputs.push_back(std::bit_cast<float>(bits | 0x80000000u));
        if (bits % 7 == 0)
            inputs.push_back(static_cast<float>(bits) * 0.5f);
    }
    for (const bool avx512 : avx512Settings()) {
        const Avx512ConversionsAllowed allowed(avx512);
        std::vector<std::uint16_t> bf(inputs.size());
        floatToBFloat16(inputs.data(), bf.data(), inputs.size());
        for (std::size_t i = 0; i < inputs.size(); ++i)
            ASSERT_EQ(bf[i], reference::floatToBFloat16Bits(inputs[i]))
                << "bits 0x" << std::hex << std::bit_cast<std::uint32_t>(inputs[i]) << pathName(avx512);
    }
}

TEST(Numerics, BFloat16Rounding)
{
    using reference::floatToBFloat16Bits;
    EXPECT_EQ(floatToBFloat16Bits(1.0f), 0x3f80);
    EXPECT_EQ(floatToBFloat16Bits(std::bit_cast<float>(0x3f808000u)), 0x3f80);        // tie, even stays
    EXPECT_EQ(floatToBFloat16Bits(std::bit_cast<float>(0x3f818000u)), 0x3f82);        // tie, odd rounds up
    EXPECT_EQ(floatToBFloat16Bits(std::numeric_limits<float>::max()), 0x7f80);        // overflows to inf
    EXPECT_EQ(floatToBFloat16Bits(std::ldexp(1.0f, -130)), 0x0008);                   // subnormals kept
    const std::uint16_t nan = floatToBFloat16Bits(std::bit_cast<float>(0x7f800001u)); // signalling NaN
    EXPECT_EQ(nan & 0x7f80, 0x7f80);
    EXPECT_NE(nan & 0x007f, 0) << "a NaN must never turn into infinity";
    EXPECT_EQ(roundToDType(65536.0f * 1.001f, DType::BF16), 65536.0f);
}

TEST(Numerics, AllBFloat16ValuesRoundTrip)
{
    std::vector<std::uint16_t> in(65536), out(65536);
    for (std::uint32_t i = 0; i < 65536; ++i)
        in[i] = static_cast<std::uint16_t>(i);
    std::vector<float> wide(65536);
    for (const bool avx512 : avx512Settings()) {
        const Avx512ConversionsAllowed allowed(avx512);
        bfloat16ToFloat(in.data(), wide.data(), in.size());
        for (std::uint32_t i = 0; i < 65536; ++i)
            ASSERT_TRUE(sameFloatBits(wide[i], reference::bfloat16BitsToFloat(in[i]))) << std::hex << i;
        floatToBFloat16(wide.data(), out.data(), wide.size());
        for (std::uint32_t i = 0; i < 65536; ++i) {
            const bool isNan = (i & 0x7f80) == 0x7f80 && (i & 0x7f) != 0;
            ASSERT_EQ(out[i], isNan ? (i | 0x40) : i) << std::hex << i << pathName(avx512);
        }
    }
}

TEST(Numerics, RoundThroughMatchesScalarRounding)
{
    std::vector<float> values;
    for (int i = -2000; i < 2000; ++i)
        values.push_back(std::ldexp(static_cast<float>(i) * 1.37f, i % 40 - 20));
    for (DType t : {DType::F16, DType::BF16}) {
        std::vector<float> rounded = values;
        roundThrough(rounded.data(), rounded.size(), t);
        for (std::size_t i = 0; i < values.size(); ++i)
            ASSERT_TRUE(sameFloatBits(rounded[i], roundToDType(values[i], t))) << values[i] << " " << dtypeName(t);
    }
}
