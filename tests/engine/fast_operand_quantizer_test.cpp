// The fast operand quantiser (engine/numerics/fast_operand_quantizer.h) against the slow path
// it stands in for in training (quantizeGemmOperand with statistics, which gathers K, runs the
// block quantiser's codes and scatters back), bit for bit: every layout (K along rows, down
// columns, across a convolution's batch and pixels, 128x128 tiles), every scheme and element,
// bf16 and fp32 in and out, rounded to nearest even and stochastically, on AVX-512 and on the
// portable loops; bf16 output is refused exactly where a value is not a bf16; and what it
// leaves to the slow path (non-finite values, a partial block the format refuses, a delayed
// scale with stochastic rounding).
#include "engine/model/gemm_inputs.h"
#include "engine/numerics/conversions.h"
#include "engine/numerics/fast_operand_quantizer.h"
#include "engine/numerics/minifloat_codec.h"
#include "operand_quantization_cases.h"

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <optional>
#include <random>

using namespace mantissa;

namespace {

constexpr MiniFloat kElements[] = {MiniFloat::E4M3, MiniFloat::E5M2, MiniFloat::E3M2, MiniFloat::E2M3, MiniFloat::E2M1};

using test::scaledFormat;

// Gaussian values over 2^-30 .. 2^10 with a few zeros, each a bf16, so that a bf16 and an fp32
// buffer hold the same operand.
std::vector<float> heavyTailed(std::size_t n, std::uint32_t seed)
{
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v)
        x = roundToDType(normal(gen) * std::exp2(std::floor(uniform(gen) * 40.0f) - 30.0f) *
                             (uniform(gen) < 0.02f ? 0.0f : 1.0f),
                         DType::BF16);
    return v;
}

struct Case {
    KLayout layout;
    FastOperand::Layout fastLayout;
    const char* name;
};

FastOperand operandOf(const std::vector<float>& values, const std::vector<std::uint16_t>& bf16, bool useBf16,
                      const Case& c)
{
    FastOperand op;
    op.data = useBf16 ? static_cast<const void*>(bf16.data()) : values.data();
    op.bf16 = useBf16;
    op.layout = c.fastLayout;
    op.outer = static_cast<std::size_t>(c.layout.outer);
    op.k = static_cast<std::size_t>(c.layout.k);
    op.inner = static_cast<std::size_t>(c.layout.inner);
    return op;
}

// The slow path's elements and decode scale: quantizeGemmOperand measuring statistics never
// takes a fast path.
struct SlowOperand {
    std::vector<float> values;
    float scale = 1.0f;
};
SlowOperand slowOperand(const std::vector<float>& values, const KLayout& layout, const OperandFormat& f,
                        std::int64_t weightRows = 1, float delayedScale = 1.0f, std::uint64_t firstCounter = 0)
{
    SlowOperand o{std::vector<float>(values.size())};
    QuantStats stats;
    o.scale = quantizeGemmOperand(values, o.values, layout, f,
                                  Shape({weightRows, static_cast<std::int64_t>(values.size()) / weightRows}),
                                  delayedScale, firstCounter, &stats);
    return o;
}

// The slow path's values: the elements times the decode scale for per-tensor formats (what
// the fast path writes without FastOperandOutput::decodeScale), the dequantised values else.
std::vector<float> slowPath(const std::vector<float>& values, const KLayout& layout, const OperandFormat& f,
                            std::int64_t weightRows = 1, float delayedScale = 1.0f, std::uint64_t firstCounter = 0)
{
    SlowOperand o = slowOperand(values, layout, f, weightRows, delayedScale, firstCounter);
    for (float& v : o.values)
        v *= o.scale;
    return o.values;
}

bool allBf16(const std::vector<float>& v)
{
    for (const float x : v)
        if (std::bit_cast<std::uint32_t>(x) & 0xffffu)
            return false;
    return true;
}

// Runs the fast path with every input and output type and compares with `want`.
void expectFastMatches(const std::vector<float>& values, FastOperand op, const OperandFormat& f,
                       const std::vector<float>& want, const std::string& what, bool expectBf16Done)
{
    std::vector<std::uint16_t> bf16(values.size());
    floatToBFloat16(values.data(), bf16.data(), values.size());
    const bool inputIsBf16 = allBf16(values);
    for (const bool inBf16 : {false, true}) {
        if (inBf16 && !inputIsBf16)
            continue;
        op.data = inBf16 ? static_cast<const void*>(bf16.data()) : values.data();
        op.bf16 = inBf16;
        std::vector<float> out32(values.size());
        ASSERT_EQ(quantizeOperandFast(op, {out32.data(), false}, f.format), FastResult::Done) << what;
        for (std::size_t i = 0; i < values.size(); ++i)
            ASSERT_EQ(std::bit_cast<std::uint32_t>(out32[i]), std::bit_cast<std::uint32_t>(want[i]))
                << what << (inBf16 ? ", bf16 in" : ", fp32 in") << ": value " << values[i] << " (index " << i
                << ") gave " << out32[i] << ", the slow path " << want[i];
        std::vector<std::uint16_t> out16(values.size());
        const FastResult r = quantizeOperandFast(op, {out16.data(), true}, f.format);
        if (expectBf16Done) { // MX values in bf16's range are bf16 numbers
            EXPECT_TRUE(allBf16(want)) << what;
        }
        if (!allBf16(want)) {
            EXPECT_EQ(r, FastResult::NeedsFp32) << what;
            continue;
        }
        ASSERT_EQ(r, FastResult::Done) << what;
        for (std::size_t i = 0; i < values.size(); ++i)
            ASSERT_EQ(static_cast<std::uint32_t>(out16[i]) << 16, std::bit_cast<std::uint32_t>(want[i]))
                << what << ", bf16 out: index " << i;
    }
}

const Case kCases[] = {
    {KLayout::rows(12, 160), FastOperand::Layout::Along, "rows 12x160"},         // 128 + a padded 32
    {KLayout::rows(6, 20), FastOperand::Layout::Along, "short rows 6x20"},       // rows shorter than a block
    {KLayout::along(3, 70, 67), FastOperand::Layout::Along, "columns 3x70x67"},  // partial blocks and lane groups
    {KLayout::along(1, 96, 130), FastOperand::Layout::Along, "columns 96x130"},  // three lane groups
    {KLayout::around(5, 7, 45), FastOperand::Layout::Around, "around 5x7x45"},   // blocks across images
    {KLayout::around(3, 4, 100), FastOperand::Layout::Around, "around 3x4x100"}, // blocks inside an image
    // Rows of 4 x 1800 values: several work items each (4096 values at most), blocks across
    // images, split over threads.
    {KLayout::around(4, 8, 1800), FastOperand::Layout::Around, "around 4x8x1800"},
    {KLayout::rows(256, 1024), FastOperand::Layout::Along, "rows 256x1024"}, // split over threads
    {KLayout::along(1, 512, 256), FastOperand::Layout::Along, "columns 512x256"},
    {KLayout::along(2, 40, 600), FastOperand::Layout::Along, "columns 2x40x600"}, // 256 + 256 + 88 columns
};

// For every finite code of `element`, with its value x and the next code's (1.25 x after the
// largest), the values points(x, next), each `copies` times with both signs.
template <typename Points>
std::vector<float> aroundEveryCode(MiniFloat element, Points points, int copies)
{
    const MiniFloatFormat& mf = miniFloatFormat(element);
    std::vector<float> v;
    for (std::uint32_t code = 0; code <= mf.maxFiniteMagnitudeCode(); ++code) {
        const float x = decodeMiniFloat(static_cast<std::uint8_t>(code), element);
        const float next = code < mf.maxFiniteMagnitudeCode()
                               ? decodeMiniFloat(static_cast<std::uint8_t>(code + 1), element)
                               : x * 1.25f;
        for (const float y : points(x, next))
            for (int copy = 0; copy < copies; ++copy) {
                v.push_back(y);
                v.push_back(-y);
            }
    }
    return v;
}

class FastOperandQuantizer : public ::testing::TestWithParam<bool> {
protected:
    void SetUp() override { m_previous = allowAvx512FastQuantizer(GetParam()); }
    void TearDown() override { allowAvx512FastQuantizer(m_previous); }

private:
    bool m_previous = true;
};

} // namespace

TEST_P(FastOperandQuantizer, EveryLayoutSchemeAndElementMatchesTheSlowPath)
{
    for (const Case& c : kCases) {
        const std::vector<float> values = heavyTailed(static_cast<std::size_t>(c.layout.count()), 11);
        FastOperand op = operandOf(values, {}, false, c);
        for (const MiniFloat element : kElements) {
            std::vector<OperandFormat> formats{scaledFormat(ScalingScheme::PerTensor, element, 0),
                                               scaledFormat(ScalingScheme::Fp32Blocks, element, 128)};
            for (const MxScaleRule rule : {MxScaleRule::Floor, MxScaleRule::Ceil, MxScaleRule::RCeil})
                formats.push_back(scaledFormat(ScalingScheme::Mx, element, 32, rule));
            if (element == MiniFloat::E2M1)
                formats.push_back(scaledFormat(ScalingScheme::Nvfp4, element, 16));
            for (const OperandFormat& f : formats) {
                const std::string what = std::string(c.name) + ", " + describeQuantFormat(f.format);
                expectFastMatches(values, op, f, slowPath(values, c.layout, f), what,
                                  f.format.scheme == ScalingScheme::Mx);
            }
        }
    }
}

// Stochastic rounding draws each value's bits by its place in the span the slow path gathers:
// the same bits on every layout, from any first counter, with MX's values still bf16 numbers.
TEST_P(FastOperandQuantizer, StochasticRoundingMatchesTheSlowPathOnEveryLayout)
{
    constexpr std::uint64_t kFirstCounter = 1000003;
    for (const Case& c : kCases) {
        const std::vector<float> values = heavyTailed(static_cast<std::size_t>(c.layout.count()), 21);
        FastOperand op = operandOf(values, {}, false, c);
        op.firstCounter = kFirstCounter;
        for (const MiniFloat element : kElements) {
            std::vector<OperandFormat> formats{scaledFormat(ScalingScheme::PerTensor, element, 0, {}, true),
                                               scaledFormat(ScalingScheme::Fp32Blocks, element, 128, {}, true),
                                               scaledFormat(ScalingScheme::Mx, element, 32, MxScaleRule::Floor, true),
                                               scaledFormat(ScalingScheme::Mx, element, 32, MxScaleRule::RCeil, true)};
            if (element == MiniFloat::E2M1)
                formats.push_back(scaledFormat(ScalingScheme::Nvfp4, element, 16, {}, true));
            for (const OperandFormat& f : formats) {
                const std::string what = std::string(c.name) + ", stochastic " + describeQuantFormat(f.format);
                const std::vector<float> want = slowPath(values, c.layout, f, 1, 1.0f, kFirstCounter);
                // Stochastic rounding really ran: nearest even gives other values somewhere.
                OperandFormat nearest = f;
                nearest.format.encoding.rounding = Rounding::NearestEven;
                ASSERT_NE(want, slowPath(values, c.layout, nearest)) << what;
                expectFastMatches(values, op, f, want, what, f.format.scheme == ScalingScheme::Mx);
            }
        }
    }
}

// NVFP4's 16x16 weight tiles, stochastically: the counter is the weight's own index.
TEST_P(FastOperandQuantizer, StochasticNvfp4WeightTilesMatchTheSlowPath)
{
    OperandFormat f = scaledFormat(ScalingScheme::Nvfp4, MiniFloat::E2M1, 16, {}, true);
    f.format.blockRows = 16;
    for (const auto& [rows, cols] : {std::pair{48, 64}, std::pair{40, 72}}) { // whole tiles, and padded ones
        const std::vector<float> values = heavyTailed(static_cast<std::size_t>(rows * cols), 22);
        FastOperand op;
        op.layout = FastOperand::Layout::Tiles;
        op.outer = static_cast<std::size_t>(rows);
        op.k = static_cast<std::size_t>(cols);
        op.tile = 16;
        op.firstCounter = 77;
        expectFastMatches(values, op, f, slowPath(values, KLayout::rows(rows, cols), f, rows, 1.0f, 77),
                          "stochastic NVFP4 16x16 tiles " + std::to_string(rows) + "x" + std::to_string(cols), false);
    }
}

// Around every code and midpoint, and below the smallest subnormal (where the slow path's
// shift passes 32 and 64 bits), the stochastic rounding of each element format: many draws
// of each value, so that both directions are taken.
TEST_P(FastOperandQuantizer, StochasticRoundingMatchesAtEveryCodeAndFarBelowTheSubnormals)
{
    for (const MiniFloat element : kElements) {
        const MiniFloatFormat& mf = miniFloatFormat(element);
        std::vector<float> v = aroundEveryCode(
            element,
            [](float x, float next) {
                return std::array{x, (3 * x + next) / 4, (x + next) / 2, std::nextafter(next, 0.0f)};
            },
            8);
        const float smallest = mf.minSubnormal();
        for (const float y : {smallest / 3, std::ldexp(smallest, -20), std::ldexp(smallest, -40),
                              std::ldexp(smallest, -70), std::numeric_limits<float>::denorm_min()})
            for (int draw = 0; draw < 64; ++draw)
                v.push_back(draw % 2 ? y : -y);
        // The per-tensor scale maps the amax onto the format's largest value: 1 here.
        v.push_back(mf.maxFinite());
        const Case c{KLayout::rows(1, static_cast<std::int64_t>(v.size())), FastOperand::Layout::Along, "codes"};
        const OperandFormat f = scaledFormat(ScalingScheme::PerTensor, element, 0, {}, true);
        expectFastMatches(v, operandOf(v, {}, false, c), f, slowPath(v, c.layout, f),
                          std::string("stochastic ") + std::string(enumKey(element)), false);
    }
}

TEST_P(FastOperandQuantizer, WeightTilesMatchTheSlowPath)
{
    // 300 x 200: full 128x128 tiles, and partial ones at the right and bottom edges.
    const std::vector<float> values = heavyTailed(300 * 200, 12);
    OperandFormat f = scaledFormat(ScalingScheme::PerTensor, MiniFloat::E4M3, 0);
    f.tile2d = 128;
    FastOperand op;
    op.layout = FastOperand::Layout::Tiles;
    op.outer = 300;
    op.k = 200;
    op.tile = 128;
    expectFastMatches(values, op, f, slowPath(values, KLayout::rows(300, 200), f, 300), "128x128 tiles", false);
}

TEST_P(FastOperandQuantizer, EveryCodeAndMidpointMatches)
{
    for (const MiniFloat element : kElements) {
        const std::vector<float> v = aroundEveryCode(
            element,
            [](float x, float next) {
                const float mid = (x + next) / 2;
                return std::array{x, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)};
            },
            1);
        const Case c{KLayout::rows(1, static_cast<std::int64_t>(v.size())), FastOperand::Layout::Along, "codes"};
        const OperandFormat f = scaledFormat(ScalingScheme::PerTensor, element, 0);
        expectFastMatches(v, operandOf(v, {}, false, c), f, slowPath(v, c.layout, f), std::string(enumKey(element)),
                          false);
    }
}

// Each MX rule decides the block scale's exponent from the amax's bits alone. Where it can go
// wrong is at a block whose amax lies at, just below or just above the element's largest value
// times a power of two (rceil's boundary) or at a power of two (ceil's): one block each, the
// neighbours fp32's and bf16's, each block's other values a third and a seventh of its amax.
TEST_P(FastOperandQuantizer, MxScaleRulesMatchTheSlowPathAtTheirBoundaries)
{
    for (const MiniFloat element : kElements) {
        const float max = miniFloatFormat(element).maxFinite();
        for (const bool bf16Grid : {false, true}) {
            std::vector<float> v;
            for (const int k : {-20, -3, 0, 1, 7, 20})
                for (const float edge : {std::ldexp(max, k), std::ldexp(1.0f, k)}) {
                    const float step = bf16Grid ? std::ldexp(edge, -7) : 0.0f;
                    for (const float amax : {bf16Grid ? edge - step / 2 : std::nextafter(edge, 0.0f), edge,
                                             bf16Grid ? edge + step : std::nextafter(edge, 1e30f)}) {
                        std::vector<float> block(32, 0.0f);
                        block[0] = amax;
                        block[5] = -amax / 3.0f;
                        block[17] = amax / 7.0f;
                        if (bf16Grid)
                            for (float& x : block)
                                x = roundToDType(x, DType::BF16);
                        v.insert(v.end(), block.begin(), block.end());
                    }
                }
            const Case c{KLayout::rows(1, static_cast<std::int64_t>(v.size())), FastOperand::Layout::Along,
                         bf16Grid ? "bf16 boundaries" : "fp32 boundaries"};
            for (const MxScaleRule rule : {MxScaleRule::Floor, MxScaleRule::Ceil, MxScaleRule::RCeil}) {
                const OperandFormat f = scaledFormat(ScalingScheme::Mx, element, 32, rule);
                expectFastMatches(v, operandOf(v, {}, false, c), f, slowPath(v, c.layout, f),
                                  std::string(c.name) + ", " + describeQuantFormat(f.format), false);
            }
        }
    }
}

TEST_P(FastOperandQuantizer, MxValuesBelowBf16sRangeAskForFp32)
{
    // A block whose amax 2^-119 clamps the E8M0 scale at 2^-127: an E4M3 subnormal 2^-9 times it
    // is 2^-136, an fp32 subnormal but below bf16's smallest (2^-133).
    std::vector<float> v(96, 0.0f);
    v[0] = std::ldexp(1.0f, -119);
    v[1] = std::ldexp(1.0f, -136);
    // A block whose amax is itself subnormal, and one whose amax is a power of two (the ceil
    // rule's exact case).
    v[32] = std::ldexp(1.0f, -140);
    v[33] = 3 * std::ldexp(1.0f, -147);
    v[64] = -0.125f;
    v[65] = 0.1f;
    const OperandFormat f = scaledFormat(ScalingScheme::Mx, MiniFloat::E4M3, 32);
    const Case c{KLayout::rows(1, 96), FastOperand::Layout::Along, "tiny"};
    const std::vector<float> want = slowPath(v, c.layout, f);
    ASSERT_EQ(want[1], std::ldexp(1.0f, -136));
    std::vector<std::uint16_t> out16(96);
    EXPECT_EQ(quantizeOperandFast(operandOf(v, {}, false, c), {out16.data(), true}, f.format), FastResult::NeedsFp32);
    for (const MxScaleRule rule : {MxScaleRule::Floor, MxScaleRule::Ceil, MxScaleRule::RCeil}) {
        const OperandFormat g = scaledFormat(ScalingScheme::Mx, MiniFloat::E4M3, 32, rule);
        expectFastMatches(v, operandOf(v, {}, false, c), g, slowPath(v, c.layout, g), "tiny", false);
    }
}

TEST_P(FastOperandQuantizer, DelayedScalingUsesTheGivenScaleAndMeasuresTheAmax)
{
    const std::vector<float> values = heavyTailed(70000, 13); // large enough to be split
    for (const MiniFloat element : {MiniFloat::E4M3, MiniFloat::E5M2})
        for (const float scale : {1.0f, 3.7f, 1e6f}) { // 1e6: most values saturate
            OperandFormat f = scaledFormat(ScalingScheme::PerTensor, element, 0);
            f.delayed = true;
            const KLayout layout = KLayout::rows(1, 70000);
            const std::vector<float> want = slowPath(values, layout, f, 1, scale);
            std::vector<float> out(values.size());
            float amax = -1.0f;
            FastOperand op;
            op.data = values.data();
            op.k = values.size();
            ASSERT_EQ(quantizeOperandFast(op, {out.data(), false}, f.format, scale, &amax), FastResult::Done);
            float largest = 0.0f;
            for (const float x : values)
                largest = std::max(largest, std::abs(x));
            EXPECT_EQ(amax, largest);
            for (std::size_t i = 0; i < values.size(); ++i)
                ASSERT_EQ(std::bit_cast<std::uint32_t>(out[i]), std::bit_cast<std::uint32_t>(want[i]))
                    << enumKey(element) << " scale " << scale << ": index " << i;
        }
}

// Per-tensor formats hand the FP8 GEMM the elements and the decode scale: the slow path's, bit
// for bit, always as bf16 (FP8 elements are bf16 numbers), current and delayed scaling alike;
// the block formats refuse to (their scales are not one per tensor).
TEST_P(FastOperandQuantizer, PerTensorElementsAndScaleMatchTheSlowPath)
{
    const std::vector<float> values = heavyTailed(70000, 15);
    std::vector<std::uint16_t> bf16(values.size());
    floatToBFloat16(values.data(), bf16.data(), values.size());
    const KLayout layout = KLayout::rows(1, 70000);
    for (const MiniFloat element : {MiniFloat::E4M3, MiniFloat::E5M2})
        for (const std::optional<float> fixed : {std::optional<float>(), std::optional<float>(3.7f)}) {
            OperandFormat f = scaledFormat(ScalingScheme::PerTensor, element, 0);
            f.delayed = fixed.has_value();
            ASSERT_TRUE(multipliesElements(f));
            const SlowOperand want = slowOperand(values, layout, f, 1, fixed.value_or(1.0f));
            EXPECT_NE(want.scale, 1.0f);
            for (const bool inBf16 : {false, true}) {
                const std::string what = std::string(enumKey(element)) + (fixed ? " delayed" : " current") +
                                         (inBf16 ? ", bf16 in" : ", fp32 in");
                FastOperand op;
                op.data = inBf16 ? static_cast<const void*>(bf16.data()) : values.data();
                op.bf16 = inBf16;
                op.k = values.size();
                std::vector<std::uint16_t> out(values.size());
                float scale = 0.0f;
                ASSERT_EQ(quantizeOperandFast(op, {out.data(), true, &scale}, f.format, fixed), FastResult::Done)
                    << what;
                EXPECT_EQ(std::bit_cast<std::uint32_t>(scale), std::bit_cast<std::uint32_t>(want.scale)) << what;
                for (std::size_t i = 0; i < values.size(); ++i)
                    ASSERT_EQ(static_cast<std::uint32_t>(out[i]) << 16, std::bit_cast<std::uint32_t>(want.values[i]))
                        << what << ": index " << i << ", value " << values[i];
            }
        }
    std::vector<float> out(128);
    float scale = 0.0f;
    FastOperand op;
    op.data = values.data();
    op.k = 128;
    EXPECT_EQ(quantizeOperandFast(op, {out.data(), false, &scale},
                                  scaledFormat(ScalingScheme::Fp32Blocks, MiniFloat::E4M3, 128).format),
              FastResult::SlowPath);
    EXPECT_FALSE(multipliesElements(scaledFormat(ScalingScheme::Fp32Blocks, MiniFloat::E4M3, 128)));
    op.layout = FastOperand::Layout::Tiles;
    op.tile = 128;
    OperandFormat tiles = scaledFormat(ScalingScheme::PerTensor, MiniFloat::E4M3, 0);
    tiles.tile2d = 128;
    EXPECT_EQ(quantizeOperandFast(op, {out.data(), false, &scale}, tiles.format), FastResult::SlowPath);
    EXPECT_FALSE(multipliesElements(tiles));
}

TEST_P(FastOperandQuantizer, LeavesTheOtherCasesToTheSlowPath)
{
    std::vector<float> v = heavyTailed(64, 14), out(64);
    FastOperand op;
    op.data = v.data();
    op.outer = 1;
    op.k = 64;
    const OperandFormat mx = scaledFormat(ScalingScheme::Mx, MiniFloat::E4M3, 32);
    // Stochastic rounding with a given (delayed) scale rounds to nearest in the slow path.
    const OperandFormat stochastic = scaledFormat(ScalingScheme::PerTensor, MiniFloat::E4M3, 0, {}, true);
    EXPECT_EQ(quantizeOperandFast(op, {out.data(), false}, stochastic.format, 2.0f), FastResult::SlowPath);
    OperandFormat refuse = mx;
    refuse.format.partialBlocks = PartialBlock::Refuse;
    op.k = 48;
    op.outer = 1;
    std::vector<float> part(48);
    op.data = part.data();
    EXPECT_EQ(quantizeOperandFast(op, {out.data(), false}, refuse.format), FastResult::SlowPath);
    op.data = v.data();
    op.k = 64;
    for (const float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
        v[40] = bad;
        EXPECT_EQ(quantizeOperandFast(op, {out.data(), false}, mx.format), FastResult::SlowPath);
        EXPECT_EQ(quantizeOperandFast(op, {out.data(), false},
                                      scaledFormat(ScalingScheme::PerTensor, MiniFloat::E5M2, 0).format),
                  FastResult::SlowPath);
        op.layout = FastOperand::Layout::Along;
        op.outer = 1;
        op.k = 2;
        op.inner = 32; // down the columns
        EXPECT_EQ(quantizeOperandFast(op, {out.data(), false}, mx.format), FastResult::SlowPath);
        op.k = 64;
        op.inner = 1;
    }
}

INSTANTIATE_TEST_SUITE_P(Isa, FastOperandQuantizer, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) {
                             return info.param ? std::string("Avx512WhereAvailable") : std::string("Portable");
                         });

TEST(FastOperandQuantizerIsa, Avx512IsUsedWhereTheCpuHasIt)
{
    const bool has =
        __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    EXPECT_EQ(fastQuantizerUsesAvx512(), has);
    if (!has)
        GTEST_SKIP() << "this CPU has no AVX-512 F/BW/VL: only the portable loops ran";
}
