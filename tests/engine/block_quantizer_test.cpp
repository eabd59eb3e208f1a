// Block scaling (engine/numerics/block_quantizer.h): the OCP MX scale rules on known cases
// (957 -> 896 in MXFP8-E4M3, microxcaling issue 4), exhaustive round trips of every element
// code at many block scales, NVFP4's two-level scale worked by hand, per-tensor and 1x128
// fp32 scaling, partial blocks, NaN blocks, the statistics and stochastic rounding in blocks.
#include "engine/numerics/block_quantizer.h"
#include "engine/util/check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace mantissa;

namespace {

QuantFormat named(const char* name)
{
    const auto format = quantFormatNamed(name);
    EXPECT_TRUE(format.has_value()) << name;
    return format.value_or(QuantFormat{});
}

QuantFormat withRule(QuantFormat format, MxScaleRule rule)
{
    format.scaleRule = rule;
    return format;
}

std::vector<float> dequantized(const QuantizedTensor& q)
{
    std::vector<float> out(q.codes.size());
    dequantize(q, out);
    return out;
}

std::vector<float> gaussian(std::size_t n, unsigned seed, float sigma = 1.0f)
{
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, sigma);
    std::vector<float> v(n);
    for (float& x : v)
        x = normal(rng);
    return v;
}

} // namespace

// microxcaling issue 4: with the spec's floor rule a block whose largest value is 957 gets
// the scale 2^(floor(log2 957) - 8) = 2, and 957 / 2 = 478.5 lies beyond E4M3's 448: it clips.
TEST(MxScaling, Value957ClipsTo896UnderTheFloorRule)
{
    std::vector<float> block(32, 0.0f);
    block[0] = 957.0f;
    block[5] = -3.0f;
    const QuantizedTensor floor = quantize(block, 32, withRule(named("mxfp8"), MxScaleRule::Floor));
    ASSERT_EQ(floor.blocks.size(), 1u);
    EXPECT_EQ(floor.blocks[0].scaleCode, 128); // 2^1
    EXPECT_EQ(floor.blocks[0].scale, 2.0f);
    EXPECT_TRUE(floor.blocks[0].clipped);
    EXPECT_EQ(floor.codes[0], 0x7e); // 448
    EXPECT_EQ(dequantized(floor)[0], 896.0f);
    EXPECT_EQ(dequantized(floor)[5], -3.0f);
    // ceil and rceil pick 2^2: 957 / 4 = 239.25 rounds to 240, nothing clips.
    for (const MxScaleRule rule : {MxScaleRule::Ceil, MxScaleRule::RCeil}) {
        const QuantizedTensor q = quantize(block, 32, withRule(named("mxfp8"), rule));
        EXPECT_EQ(q.blocks[0].scaleCode, 129) << enumKey(rule);
        EXPECT_FALSE(q.blocks[0].clipped) << enumKey(rule);
        EXPECT_EQ(dequantized(q)[0], 960.0f) << enumKey(rule);
    }
}

TEST(MxScaling, ScaleRulesOnTheirBoundaries)
{
    struct Case {
        float amax;
        int floor, ceil, rceil; // E8M0 exponents for E4M3 elements (emax 8, max 448)
    };
    const Case cases[] = {
        {448.0f, 0, 1, 0},                       // max itself: floor and rceil fit it exactly; ceil wastes a binade
        {256.0f, 0, 0, 0},                       // a power of two
        {500.0f, 0, 1, 1},                       // beyond max in its binade: floor clips
        {449.0f, 0, 1, 1},   {1.0f, -8, -8, -8}, // rceil: ceil(log2(1/448)) = ceil(-8.8) = -8
        {0.75f, -9, -8, -9},
    };
    for (const Case& c : cases) {
        const std::vector<float> block = {c.amax, 0.5f * c.amax};
        const int expected[] = {c.floor, c.ceil, c.rceil};
        for (const MxScaleRule rule : {MxScaleRule::Floor, MxScaleRule::Ceil, MxScaleRule::RCeil}) {
            QuantFormat f = withRule(named("mxfp8"), rule);
            f.blockSize = 2;
            const QuantizedTensor q = quantize(block, 2, f);
            EXPECT_EQ(q.blocks[0].scaleCode - 127, expected[static_cast<int>(rule)])
                << "amax " << c.amax << " rule " << enumKey(rule);
            const bool clips = c.amax / std::ldexp(1.0f, q.blocks[0].scaleCode - 127) > 464.0f; // beyond the tie
            EXPECT_EQ(q.blocks[0].clipped, clips) << "amax " << c.amax << " rule " << enumKey(rule);
        }
    }
}

// Every finite element code, placed in blocks whose largest value is max * 2^e, comes back
// bit for bit: the floor and rceil rules both pick exactly 2^e there.
TEST(MxScaling, EveryElementCodeRoundTripsAtManyScales)
{
    for (const char* name : {"mxfp8", "mxfp8-e5m2", "mxfp6-e3m2", "mxfp6-e2m3", "mxfp4"}) {
        const QuantFormat base = named(name);
        const MiniFloatFormat& element = miniFloatFormat(base.element);
        std::vector<std::uint8_t> finiteCodes;
        for (std::uint32_t c = 0; c < element.codeCount(); ++c)
            if (std::isfinite(decodeMiniFloat(static_cast<std::uint8_t>(c), base.element)))
                finiteCodes.push_back(static_cast<std::uint8_t>(c));
        for (const int e : {-127, -100, -20, -1, 0, 1, 7, 40, 126 - element.maxExponent()}) {
            std::vector<float> values;
            for (std::size_t i = 0; i < finiteCodes.size(); i += 31) {
                values.push_back(std::ldexp(element.maxFinite(), e)); // sets the block's amax
                for (std::size_t j = i; j < i + 31; ++j)
                    values.push_back(
                        j < finiteCodes.size() ? std::ldexp(decodeMiniFloat(finiteCodes[j], base.element), e) : 0.0f);
            }
            for (const MxScaleRule rule : {MxScaleRule::Floor, MxScaleRule::RCeil}) {
                const QuantizedTensor q = quantize(values, 0, withRule(base, rule));
                const std::vector<float> back = dequantized(q);
                int mismatches = 0;
                for (std::size_t i = 0; i < values.size() && mismatches < 5; ++i) {
                    if (back[i] != values[i] || std::signbit(back[i]) != std::signbit(values[i])) {
                        ADD_FAILURE() << name << " 2^" << e << " " << enumKey(rule) << ": " << values[i]
                                      << " came back " << back[i];
                        ++mismatches;
                    }
                }
                for (const BlockScale& block : q.blocks) {
                    EXPECT_EQ(block.scaleCode, e + 127) << name;
                    EXPECT_FALSE(block.clipped) << name;
                }
            }
        }
    }
}

TEST(MxScaling, ZeroTinyAndNonFiniteBlocks)
{
    std::vector<float> values(96, 0.0f);
    values[32] = 1e-45f; // a block whose scale clamps at 2^-127: its value flushes to zero
    values[64] = 1.0f;
    values[65] = std::numeric_limits<float>::quiet_NaN();
    const QuantFormat f = named("mxfp4");
    const QuantizedTensor q = quantize(values, 0, f);
    ASSERT_EQ(q.blocks.size(), 3u);
    EXPECT_EQ(q.blocks[0].scaleCode, 0); // all zero: 2^-127
    EXPECT_EQ(q.blocks[1].scaleCode, 0);
    EXPECT_TRUE(q.blocks[2].nanScale);
    EXPECT_EQ(q.blocks[2].scaleCode, 0xff);
    const std::vector<float> back = dequantized(q);
    for (int i = 0; i < 64; ++i)
        EXPECT_EQ(back[i], 0.0f) << i;
    for (int i = 64; i < 96; ++i)
        EXPECT_TRUE(std::isnan(back[i])) << "a NaN scale makes the whole block NaN (MX v1.0 5.3): " << i;
    const QuantStats stats = measureQuantization(values, q, back);
    EXPECT_EQ(stats.flushedToZero, 1u);
    EXPECT_EQ(stats.nanScaleBlocks, 1u);
    EXPECT_EQ(stats.nonFinite, 1u);
    values[65] = std::numeric_limits<float>::infinity();
    EXPECT_TRUE(quantize(values, 0, f).blocks[2].nanScale) << "Inf has no E8M0 scale either";
}

TEST(BlockLayout, PartialBlocksAreRefusedOrPadded)
{
    const std::vector<float> values = gaussian(80, 3); // two rows of 40
    QuantFormat f = named("mxfp8");
    try {
        quantize(values, 40, f);
        FAIL() << "a row of 40 is not whole blocks of 32";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("40"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("32"), std::string::npos) << e.what();
    }
    EXPECT_THROW(quantize(values, 30, f), ConfigError) << "80 values are not whole rows of 30";

    f.partialBlocks = PartialBlock::Pad;
    const QuantizedTensor q = quantize(values, 40, f);
    ASSERT_EQ(q.blocks.size(), 4u); // per row: 32 + a short block of 8
    // The same as padding each row with 24 zeros.
    std::vector<float> padded;
    for (int row = 0; row < 2; ++row) {
        padded.insert(padded.end(), values.begin() + row * 40, values.begin() + row * 40 + 40);
        padded.insert(padded.end(), 24, 0.0f);
    }
    const QuantizedTensor reference = quantize(padded, 64, named("mxfp8"));
    const std::vector<float> back = dequantized(q), referenceBack = dequantized(reference);
    for (int row = 0; row < 2; ++row) {
        for (int i = 0; i < 40; ++i) {
            EXPECT_EQ(q.codes[row * 40 + i], reference.codes[row * 64 + i]);
            EXPECT_EQ(back[row * 40 + i], referenceBack[row * 64 + i]);
        }
    }
    for (std::size_t b = 0; b < 4; ++b)
        EXPECT_EQ(q.blocks[b].scaleCode, reference.blocks[b].scaleCode);
}

TEST(BlockLayout, BlocksNeverCrossARow)
{
    // Row 0 is small, row 1 large: with rows of 16 and blocks of 32 allowed to cross, one
    // scale would serve both; they must not share.
    std::vector<float> values(32, 0.01f);
    for (int i = 16; i < 32; ++i)
        values[i] = 100.0f;
    QuantFormat f = named("mxfp8");
    f.blockSize = 16;
    const QuantizedTensor q = quantize(values, 16, f);
    ASSERT_EQ(q.blocks.size(), 2u);
    EXPECT_LT(q.blocks[0].scale, q.blocks[1].scale);
    EXPECT_EQ(q.blockOf(15), 0u);
    EXPECT_EQ(q.blockOf(16), 1u);
}

// NVFP4 worked by hand. Tensor amax 2688 gives S_enc = 448 * 6 / 2688 = 1.
// Block 0 (amax 2688): scale 2688 / 6 * 1 = 448, E4M3 0x7e; elements x / 448 in E2M1.
// Block 1 (amax 1): scale 1/6 = 0.1667 rounds in E4M3 to 0.171875 (0x23: 2^-3 * 1.375);
//   1 / 0.171875 = 5.82 rounds to 6 (0x7); it decodes as 6 * 0.171875 = 1.03125.
// Block 2 (amax 1e-4): scale 1.7e-5 is below E4M3's smallest subnormal 2^-9: flushed.
TEST(Nvfp4, TwoLevelScaleWorkedByHand)
{
    std::vector<float> values(48, 0.0f);
    values[0] = 2688.0f;
    values[1] = -1344.0f; // 3 * 448
    values[16] = 1.0f;
    values[32] = 1e-4f;
    const QuantizedTensor q = quantize(values, 0, named("nvfp4"));
    ASSERT_EQ(q.blocks.size(), 3u);
    EXPECT_FLOAT_EQ(q.tensorScale, 1.0f);
    EXPECT_EQ(q.blocks[0].scaleCode, 0x7e);
    EXPECT_EQ(q.codes[0], 0x7); // 6
    EXPECT_EQ(q.codes[1], 0xd); // -3
    EXPECT_EQ(q.blocks[1].scaleCode, 0x23);
    EXPECT_EQ(q.codes[16], 0x7);
    EXPECT_EQ(q.blocks[2].scaleCode, 0x00);
    EXPECT_EQ(q.codes[32], 0x0);
    const std::vector<float> back = dequantized(q);
    EXPECT_FLOAT_EQ(back[0], 2688.0f);
    EXPECT_FLOAT_EQ(back[1], -1344.0f);
    EXPECT_FLOAT_EQ(back[16], 1.03125f);
    EXPECT_EQ(back[32], 0.0f);
    EXPECT_FALSE(q.blocks[1].clipped);
    const QuantStats stats = measureQuantization(values, q, back);
    EXPECT_EQ(stats.flushedToZero, 1u);
    EXPECT_EQ(stats.blocks, 3u);

    // The per-tensor scale follows the tensor's amax: the same values times 2^-10 give the
    // same element and block-scale codes.
    std::vector<float> scaled = values;
    for (float& v : scaled)
        v = std::ldexp(v, -10);
    const QuantizedTensor q2 = quantize(scaled, 0, named("nvfp4"));
    EXPECT_EQ(q2.codes, q.codes);
    for (std::size_t b = 0; b < 3; ++b)
        EXPECT_EQ(q2.blocks[b].scaleCode, q.blocks[b].scaleCode);
    EXPECT_FLOAT_EQ(q2.tensorScale, std::ldexp(1.0f, -10));
}

TEST(Fp32Scaling, PerTensorCurrentScaling)
{
    std::vector<float> values = {10.0f, -5.0f, 0.1f, 0.0f};
    QuantFormat f = named("fp8-tensor");
    const QuantizedTensor q = quantize(values, 0, f);
    ASSERT_EQ(q.blocks.size(), 1u);
    EXPECT_FLOAT_EQ(q.blocks[0].scale, 10.0f / 448.0f);
    EXPECT_EQ(q.codes[0], 0x7e); // 10 * 44.8 = 448
    EXPECT_FALSE(q.blocks[0].clipped);
    f.powerOfTwoScales = true; // s = 32 <= 44.8: 10 * 32 = 320 is exact in E4M3
    const QuantizedTensor p = quantize(values, 0, f);
    EXPECT_EQ(p.blocks[0].scale, 1.0f / 32.0f);
    EXPECT_EQ(dequantized(p)[0], 10.0f);
    EXPECT_EQ(dequantized(p)[1], -5.0f);
    const std::vector<float> zeros(8, 0.0f);
    EXPECT_EQ(quantize(zeros, 0, named("fp8-tensor")).blocks[0].scale, 1.0f) << "amax 0: scale 1";
}

TEST(Fp32Scaling, OneScalePer128AlongEachRow)
{
    std::vector<float> values = gaussian(2 * 256, 9);
    values[300] = 50.0f; // row 1, block 0 (elements 256..383)
    const QuantizedTensor q = quantize(values, 256, named("fp8-block"));
    ASSERT_EQ(q.blocks.size(), 4u);
    for (std::size_t b = 0; b < 4; ++b) {
        float amax = 0;
        for (std::size_t i = b * 128; i < b * 128 + 128; ++i)
            amax = std::max(amax, std::abs(values[i]));
        EXPECT_EQ(q.blocks[b].amax, amax);
        EXPECT_EQ(q.blocks[b].scale, 1.0f / (448.0f / amax)) << b;
    }
    EXPECT_EQ(q.blocks[2].amax, 50.0f);
}

TEST(QuantStatistics, SqnrFlushAndHistogram)
{
    const std::vector<float> values = gaussian(32 * 64, 11);
    std::vector<float> out(values.size());
    const QuantStats stats = quantizeDequantize(values, out, 0, named("mxfp8"));
    double signal = 0, noise = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
        signal += double(values[i]) * values[i];
        noise += (double(out[i]) - values[i]) * (double(out[i]) - values[i]);
    }
    EXPECT_NEAR(stats.sqnrDb(), 10 * std::log10(signal / noise), 1e-9);
    std::size_t histogramBlocks = 0;
    for (const auto& [exponent, count] : stats.scaleExponents)
        histogramBlocks += count;
    EXPECT_EQ(histogramBlocks, 64u);
    EXPECT_EQ(stats.blocks, 64u);
    EXPECT_EQ(stats.elements, values.size());

    // More mantissa bits, less noise (about 6 dB a bit): MXFP8 (3) > MXFP6 (2) > MXFP4 (1), and
    // NVFP4's finer scale beats MXFP4.
    const auto sqnr = [&](const char* name) {
        std::vector<float> o(values.size());
        return quantizeDequantize(values, o, 0, named(name)).sqnrDb();
    };
    EXPECT_GT(sqnr("mxfp8"), sqnr("mxfp6-e3m2") + 4);
    EXPECT_GT(sqnr("mxfp6-e3m2"), sqnr("mxfp4") + 4);
    EXPECT_GT(sqnr("nvfp4"), sqnr("mxfp4"));
    EXPECT_GT(sqnr("mxfp8"), 25.0);

    // On a Gaussian the floor rule clips some blocks; rceil none.
    std::vector<float> o(values.size());
    EXPECT_GT(quantizeDequantize(values, o, 0, named("mxfp4")).clippedBlockFraction(), 0.0);
    EXPECT_EQ(quantizeDequantize(values, o, 0, withRule(named("mxfp4"), MxScaleRule::RCeil)).clippedBlocks, 0u);

    // In place, as a GEMM would call it on its own input buffer.
    std::vector<float> inPlace = values;
    quantizeDequantize(inPlace, inPlace, 0, named("mxfp8"));
    EXPECT_EQ(inPlace, out);
}

TEST(QuantStatistics, PlainFormatCountsOverflowAsClipping)
{
    const std::vector<float> values = {449.0f, 1000.0f, 1e-4f, -2.0f};
    QuantFormat f = named("e4m3");
    std::vector<float> out(values.size());
    QuantStats stats = quantizeDequantize(values, out, 0, f);
    EXPECT_EQ(out[0], 448.0f);
    EXPECT_TRUE(std::isnan(out[1])) << "non-saturating E4M3: NaN";
    EXPECT_EQ(stats.clippedBlocks, 1u);
    EXPECT_EQ(stats.flushedToZero, 1u);
    EXPECT_EQ(stats.sqnrDb(), -std::numeric_limits<double>::infinity());
    f.encoding.overflow = OverflowRule::Saturate;
    stats = quantizeDequantize(values, out, 0, f);
    EXPECT_EQ(out[1], 448.0f);
    EXPECT_TRUE(std::isfinite(stats.sqnrDb()));
}

TEST(StochasticBlocks, ReproducibleIndependentOfThreadsAndUnbiased)
{
    const std::vector<float> values = gaussian(1 << 18, 21); // large enough for the parallel loop
    QuantFormat f = named("mxfp4");
    f.encoding = {Rounding::Stochastic, OverflowRule::Saturate, 42};
    const QuantizedTensor a = quantize(values, 0, f);
    const QuantizedTensor b = quantize(values, 0, f);
    EXPECT_EQ(a.codes, b.codes);
    // The second half on its own, with its first counter, draws the same.
    const std::span<const float> half = std::span(values).subspan(values.size() / 2);
    const QuantizedTensor c = quantize(half, 0, f, values.size() / 2);
    EXPECT_TRUE(std::equal(c.codes.begin(), c.codes.end(), a.codes.begin() + values.size() / 2));

    // Averaged over seeds, a value inside a block (not the block's amax) comes back unbiased.
    const std::vector<float> block = {5.5f, 1.3f, -0.7f, 2.2f};
    QuantFormat small = named("mxfp4");
    small.blockSize = 4;
    small.scaleRule = MxScaleRule::RCeil; // nothing clips
    const int draws = 4000;
    std::vector<double> sums(block.size(), 0.0);
    for (int seed = 0; seed < draws; ++seed) {
        small.encoding = {Rounding::Stochastic, OverflowRule::Saturate, static_cast<std::uint64_t>(seed)};
        const std::vector<float> back = dequantized(quantize(block, 4, small));
        for (std::size_t i = 0; i < block.size(); ++i)
            sums[i] += back[i];
    }
    for (std::size_t i = 0; i < block.size(); ++i)
        EXPECT_NEAR(sums[i] / draws, block[i], 0.05) << "element " << i; // gaps <= 2: standard error <= 0.016
}

TEST(QuantFormats, NamesAndValidation)
{
    EXPECT_EQ(named("mxfp8").element, MiniFloat::E4M3);
    EXPECT_EQ(named("mxfp8").blockSize, 32u);
    EXPECT_EQ(named("mxfp8-e5m2").element, MiniFloat::E5M2);
    EXPECT_EQ(named("mxfp6-e3m2").element, MiniFloat::E3M2);
    // "mxfp6" alone is either element (OCP MX) and both in the mxfp6 recipe: not a format, and
    // the message names the two.
    EXPECT_FALSE(quantFormatNamed("mxfp6"));
    EXPECT_NE(unknownQuantFormatMessage("mxfp6").find("mxfp6-e2m3, which the mxfp6 recipe gives activations"),
              std::string::npos);
    EXPECT_EQ(unknownQuantFormatMessage("fp7").rfind("unknown format \"fp7\"; expected one of e4m3", 0), 0u);
    EXPECT_EQ(named("mxfp6-e2m3").element, MiniFloat::E2M3);
    EXPECT_EQ(named("mxfp4").element, MiniFloat::E2M1);
    EXPECT_EQ(named("nvfp4").blockSize, 16u);
    EXPECT_EQ(named("nvfp4").scheme, ScalingScheme::Nvfp4);
    EXPECT_EQ(named("fp8-block").blockSize, 128u);
    EXPECT_EQ(named("e8m0").scheme, ScalingScheme::None);
    EXPECT_FALSE(quantFormatNamed("fp7"));
    EXPECT_NE(quantFormatNameList().find("nvfp4"), std::string::npos);

    QuantFormat bad = named("nvfp4");
    bad.element = MiniFloat::E4M3;
    EXPECT_THROW(validateQuantFormat(bad), ConfigError);
    bad = named("mxfp8");
    bad.element = MiniFloat::E8M0;
    EXPECT_THROW(validateQuantFormat(bad), ConfigError);
    bad = named("mxfp8");
    bad.blockSize = 0;
    EXPECT_THROW(quantize(std::vector<float>(4, 1.0f), 0, bad), ConfigError);
}
