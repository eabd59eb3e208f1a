// The fast quantise-dequantise path (engine/numerics/fast_quantizer.h) against the bit-exact
// slow path (block_quantizer.h) it replaces in training: every code of every element format,
// the midpoints between neighbouring codes and the values one fp32 ulp either side of them,
// the overflow boundary, subnormals, and random heavy-tailed tensors under every scheme and
// scale rule, compared bit for bit; and the cases it must leave to the slow path.
#include "engine/numerics/block_quantizer.h"
#include "engine/numerics/fast_quantizer.h"
#include "engine/numerics/minifloat_codec.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

using namespace mantissa;

namespace {

constexpr MiniFloat kElements[] = {MiniFloat::E4M3, MiniFloat::E5M2, MiniFloat::E3M2, MiniFloat::E2M3, MiniFloat::E2M1};

QuantFormat formatOf(ScalingScheme scheme, MiniFloat element, std::size_t block, MxScaleRule rule)
{
    QuantFormat f;
    f.scheme = scheme;
    f.element = element;
    f.blockSize = block;
    f.scaleRule = rule;
    f.partialBlocks = PartialBlock::Pad;
    return f;
}

void expectSameBits(const std::vector<float>& values, std::size_t rowLength, const QuantFormat& format)
{
    std::vector<float> slow(values.size()), fast(values.size());
    quantizeDequantize(values, slow, rowLength, format);
    ASSERT_TRUE(quantizeDequantizeFast(values, fast, rowLength, format)) << describeQuantFormat(format);
    for (std::size_t i = 0; i < values.size(); ++i)
        ASSERT_EQ(std::bit_cast<std::uint32_t>(fast[i]), std::bit_cast<std::uint32_t>(slow[i]))
            << describeQuantFormat(format) << ": value " << values[i] << " (index " << i << ") gave " << fast[i]
            << ", the slow path " << slow[i];
}

// Every positive code's value, the midpoints to the next and one fp32 ulp either side, the
// values just beyond the largest, and all of them negated; the tensor's amax is the format's
// largest value, so a per-tensor scale of 1 puts them exactly on the code grid.
std::vector<float> codeBoundaries(MiniFloat element)
{
    const MiniFloatFormat& f = miniFloatFormat(element);
    std::vector<float> codes;
    for (std::uint32_t c = 0; c <= f.maxFiniteMagnitudeCode(); ++c)
        codes.push_back(decodeMiniFloat(static_cast<std::uint8_t>(c), element));
    std::vector<float> v;
    for (std::size_t i = 0; i < codes.size(); ++i) {
        v.push_back(codes[i]);
        const float next = i + 1 < codes.size() ? codes[i + 1] : codes[i] * 1.25f; // beyond the largest
        const float mid = (codes[i] + next) / 2;
        for (const float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)})
            v.push_back(x);
    }
    v.push_back(f.minSubnormal() / 4);
    const std::size_t positive = v.size();
    for (std::size_t i = 0; i < positive; ++i)
        v.push_back(-v[i]);
    return v;
}

std::vector<float> heavyTailed(std::size_t n, std::uint32_t seed)
{
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v)
        x = normal(gen) * std::exp2(std::floor(uniform(gen) * 40.0f) - 30.0f) * (uniform(gen) < 0.02f ? 0.0f : 1.0f);
    return v;
}

} // namespace

TEST(FastQuantizer, EveryCodeMidpointAndBoundaryMatchesTheSlowPath)
{
    for (const MiniFloat element : kElements) {
        const std::vector<float> v = codeBoundaries(element);
        expectSameBits(v, 0, formatOf(ScalingScheme::PerTensor, element, 0, MxScaleRule::Floor));
    }
}

TEST(FastQuantizer, RandomTensorsMatchUnderEverySchemeAndRule)
{
    const std::vector<float> v = heavyTailed(96 * 160, 3);
    for (const MiniFloat element : kElements) {
        SCOPED_TRACE(std::string(enumKey(element)));
        expectSameBits(v, 0, formatOf(ScalingScheme::PerTensor, element, 0, MxScaleRule::Floor));
        QuantFormat pow2 = formatOf(ScalingScheme::Fp32Blocks, element, 128, MxScaleRule::Floor);
        expectSameBits(v, 160, pow2); // 160 = 128 + a padded block of 32
        pow2.powerOfTwoScales = true;
        expectSameBits(v, 160, pow2);
        for (const MxScaleRule rule : {MxScaleRule::Floor, MxScaleRule::Ceil, MxScaleRule::RCeil})
            expectSameBits(v, 160, formatOf(ScalingScheme::Mx, element, 32, rule));
        expectSameBits(v, 20, formatOf(ScalingScheme::Mx, element, 32, MxScaleRule::Floor)); // short rows
    }
    // Large enough to be split across threads.
    const std::vector<float> big = heavyTailed(1 << 17, 4);
    expectSameBits(big, 1024, formatOf(ScalingScheme::Mx, MiniFloat::E4M3, 32, MxScaleRule::Floor));
    expectSameBits(big, 0, formatOf(ScalingScheme::PerTensor, MiniFloat::E5M2, 0, MxScaleRule::Floor));
}

TEST(FastQuantizer, LeavesTheOtherCasesToTheSlowPath)
{
    std::vector<float> v = heavyTailed(64, 5), out(64);
    QuantFormat stochastic = formatOf(ScalingScheme::Mx, MiniFloat::E4M3, 32, MxScaleRule::Floor);
    stochastic.encoding.rounding = Rounding::Stochastic;
    EXPECT_FALSE(quantizeDequantizeFast(v, out, 64, stochastic));
    EXPECT_FALSE(quantizeDequantizeFast(v, out, 64, formatOf(ScalingScheme::Nvfp4, MiniFloat::E2M1, 16, {})));
    EXPECT_FALSE(quantizeDequantizeFast(v, out, 0, formatOf(ScalingScheme::None, MiniFloat::E4M3, 0, {})));
    QuantFormat refuse = formatOf(ScalingScheme::Mx, MiniFloat::E4M3, 32, MxScaleRule::Floor);
    refuse.partialBlocks = PartialBlock::Refuse;
    EXPECT_FALSE(quantizeDequantizeFast(v, out, 48, refuse)); // the slow path names the error
    v[40] = std::numeric_limits<float>::infinity();
    EXPECT_FALSE(quantizeDequantizeFast(v, out, 64, formatOf(ScalingScheme::Mx, MiniFloat::E4M3, 32, {})));
}
