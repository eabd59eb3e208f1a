// NVIDIA's NVFP4 training recipe beyond the 1x16 blocks (issue 17): the 16x16 weight tiles
// against a plain reference written from the definition (tensor scale, each tile's E4M3 scale
// amax / 6 found by searching every E4M3 code, elements by searching every E2M1 code), edge
// tiles as zero padding, the refusal of partial tiles; the forward and data-gradient GEMMs
// reading the same quantised weight (fast and measuring paths); the 16x16 random Hadamard
// transform (orthogonal, cancelling in a product, reproducible per seed); and short training
// runs with both options on and off.
#include "engine/backend/backend.h"
#include "engine/data/dataset.h"
#include "engine/model/gemm_inputs.h"
#include "engine/numerics/block_quantizer.h"
#include "engine/numerics/conversions.h"
#include "engine/numerics/fast_operand_quantizer.h"
#include "engine/numerics/hadamard_transform.h"
#include "engine/numerics/minifloat_format.h"
#include "engine/train/trainer.h"
#include "engine/util/check.h"
#include "recorded_training.h"
#include "small_run_config.h"

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <random>
#include <set>

using namespace mantissa;

namespace {

std::vector<float> heavyTailed(std::size_t n, std::uint32_t seed)
{
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v)
        x = roundToDType(normal(gen) * (uniform(gen) < 0.05f ? 40.0f : 1.0f) * std::exp2(std::floor(uniform(gen) * 8)),
                         DType::BF16);
    return v;
}

// The nearest value of `element` to x by searching every finite code, ties to the even code,
// beyond the largest finite value saturating (the recipe casts with satfinite).
float nearestBySearch(float x, MiniFloat element)
{
    const MiniFloatFormat& f = miniFloatFormat(element);
    const auto maxCode = f.maxFiniteMagnitudeCode();
    double best = std::abs(static_cast<double>(x)), bestValue = 0.0;
    std::uint32_t bestCode = 0;
    for (std::uint32_t code = 1; code <= maxCode; ++code) {
        const double v = decodeMiniFloat(static_cast<std::uint8_t>(code), element);
        const double d = std::abs(std::abs(static_cast<double>(x)) - v);
        if (d < best || (d == best && (code & 1) == 0 && (bestCode & 1) == 1)) {
            best = d;
            bestValue = v;
            bestCode = code;
        }
    }
    if (std::abs(x) > f.maxFinite())
        bestValue = f.maxFinite();
    return static_cast<float>(x < 0 ? -bestValue : bestValue);
}

// NVFP4 with one scale per tile of 16 x 16 over [rows, cols], written from the definition:
// S_enc = 6 * 448 / amax(tensor); a tile's scale s = E4M3(amax(tile) / 6 * S_enc); elements
// E2M1(x * (S_enc / s)); values e * (s * amax(tensor) / 2688). Edge tiles are what they hold.
// `tensorAmax` < 0: the amax of `w` itself (else that of the tensor `w` is a part of).
std::vector<float> referenceTiles(const std::vector<float>& w, std::size_t rows, std::size_t cols,
                                  std::vector<float>* tileScales = nullptr, float tensorAmax = -1.0f)
{
    if (tensorAmax < 0.0f) {
        tensorAmax = 0.0f;
        for (const float v : w)
            tensorAmax = std::max(tensorAmax, std::abs(v));
    }
    const float encode = tensorAmax == 0.0f ? 1.0f : 2688.0f / tensorAmax;
    std::vector<float> out(w.size());
    for (std::size_t r0 = 0; r0 < rows; r0 += 16)
        for (std::size_t c0 = 0; c0 < cols; c0 += 16) {
            float amax = 0.0f;
            for (std::size_t r = r0; r < std::min(r0 + 16, rows); ++r)
                for (std::size_t c = c0; c < std::min(c0 + 16, cols); ++c)
                    amax = std::max(amax, std::abs(w[r * cols + c]));
            const float scale = nearestBySearch(amax / 6.0f * encode, MiniFloat::E4M3);
            if (tileScales)
                tileScales->push_back(scale);
            const float decode = scale * tensorAmax * static_cast<float>(1.0 / 2688.0);
            for (std::size_t r = r0; r < std::min(r0 + 16, rows); ++r)
                for (std::size_t c = c0; c < std::min(c0 + 16, cols); ++c) {
                    const float x = w[r * cols + c];
                    out[r * cols + c] =
                        scale == 0.0f ? 0.0f : nearestBySearch(x * (encode / scale), MiniFloat::E2M1) * decode;
                }
        }
    return out;
}

QuantFormat nvfp4Tiles(PartialBlock partial = PartialBlock::Pad)
{
    QuantFormat f = *quantFormatNamed("nvfp4");
    f.blockRows = 16;
    f.partialBlocks = partial;
    return f;
}

void expectSameBits(const std::vector<float>& got, const std::vector<float>& want, const std::string& what)
{
    ASSERT_EQ(got.size(), want.size()) << what;
    for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i]))
            << what << ", element " << i << ": " << got[i] << ", expected " << want[i];
}

} // namespace

TEST(Nvfp4Tiles, MatchAReferenceWrittenFromTheDefinition)
{
    // 64 x 48: whole tiles; 37 x 40: a short last tile row and a narrow last tile column.
    for (const auto& [rows, cols] : {std::pair<std::size_t, std::size_t>{64, 48}, {37, 40}, {16, 16}, {5, 3}}) {
        const std::string what = std::to_string(rows) + " x " + std::to_string(cols);
        const std::vector<float> w = heavyTailed(rows * cols, static_cast<std::uint32_t>(rows * 100 + cols));
        std::vector<float> scales;
        const std::vector<float> want = referenceTiles(w, rows, cols, &scales);
        const QuantizedTensor q = quantize(w, cols, nvfp4Tiles());
        ASSERT_EQ(q.blocks.size(), ((rows + 15) / 16) * ((cols + 15) / 16)) << what;
        for (std::size_t t = 0; t < q.blocks.size(); ++t)
            EXPECT_EQ(decodeMiniFloat(static_cast<std::uint8_t>(q.blocks[t].scaleCode), MiniFloat::E4M3), scales[t])
                << what << ", tile " << t;
        std::vector<float> got(w.size());
        dequantize(q, got);
        expectSameBits(got, want, what);
        // The statistics count tiles as blocks.
        std::vector<float> again(w.size());
        EXPECT_EQ(quantizeDequantize(w, again, cols, nvfp4Tiles()).blocks, q.blocks.size()) << what;
    }
}

TEST(Nvfp4Tiles, EdgeTilesAreZeroPadding)
{
    // A 20 x 24 weight gives the values of its place in the same weight padded with zeros to
    // 32 x 32: zeros change neither a tile's amax nor the tensor's.
    const std::size_t rows = 20, cols = 24;
    const std::vector<float> w = heavyTailed(rows * cols, 3);
    std::vector<float> padded(32 * 32, 0.0f);
    for (std::size_t r = 0; r < rows; ++r)
        std::copy_n(w.begin() + static_cast<std::ptrdiff_t>(r * cols), cols,
                    padded.begin() + static_cast<std::ptrdiff_t>(r * 32));
    std::vector<float> small(w.size()), big(padded.size());
    quantizeDequantize(w, small, cols, nvfp4Tiles());
    quantizeDequantize(padded, big, 32, nvfp4Tiles());
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c)
            ASSERT_EQ(small[r * cols + c], big[r * 32 + c]) << r << ", " << c;
}

TEST(Nvfp4Tiles, PartialTilesAreRefusedWhenAsked)
{
    const std::vector<float> w(20 * 32, 1.0f);
    try {
        quantize(w, 32, nvfp4Tiles(PartialBlock::Refuse));
        FAIL() << "20 rows accepted in tiles of 16";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("20 rows"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("tiles of 16x16"), std::string::npos) << e.what();
    }
    EXPECT_NO_THROW(quantize(std::vector<float>(32 * 32, 1.0f), 32, nvfp4Tiles(PartialBlock::Refuse)));
    QuantFormat plain = *quantFormatNamed("e4m3");
    plain.blockRows = 16;
    EXPECT_THROW(quantize(w, 32, plain), ConfigError); // 2D tiles need a block format
}

TEST(Nvfp4Tiles, FastPathMatchesTheSlowPath)
{
    for (const auto& [rows, cols] : {std::pair<std::size_t, std::size_t>{64, 48}, {37, 40}, {48, 1024}}) {
        const std::vector<float> w = heavyTailed(rows * cols, 9);
        OperandFormat f;
        f.format = nvfp4Tiles();
        std::vector<float> slow(w.size());
        QuantStats stats;
        const Shape shape({static_cast<std::int64_t>(rows), static_cast<std::int64_t>(cols)});
        quantizeGemmOperand(w, slow, KLayout::rows(shape[0], shape[1]), f, shape, 1.0f, 0, &stats);
        expectSameBits(slow, referenceTiles(w, rows, cols), "slow path");
        for (const bool avx512 : {true, false}) {
            const bool previous = allowAvx512FastQuantizer(avx512);
            FastOperand op;
            op.data = w.data();
            op.layout = FastOperand::Layout::Tiles;
            op.outer = rows;
            op.k = cols;
            op.tile = 16;
            std::vector<float> fast(w.size());
            EXPECT_EQ(quantizeOperandFast(op, {fast.data(), false}, f.format), FastResult::Done);
            allowAvx512FastQuantizer(previous);
            expectSameBits(fast, slow, avx512 ? "fast path (AVX-512 where present)" : "fast path (portable)");
        }
    }
}

namespace {

// A weight through a recipe's forward and data-gradient GEMM inputs, fast or measuring.
struct WeightPair {
    std::vector<float> forward, dataGrad;
};

struct Sink final : GemmInputObserver {
    std::vector<std::string> formats;
    void gemmInput(const std::string&, GemmPass, GemmOperand, const OperandFormat& format, const QuantStats&) override
    {
        formats.push_back(operandFormatLabel(format));
    }
};

WeightPair throughGemms(const Tensor& w, const KLayout& forward, const KLayout& dataGrad, RecipeSwitch blocks2d,
                        GemmInputObserver* observer)
{
    auto backend = makeCpuBackend(1);
    RecipeOptions options;
    options.weightBlocks2d = blocks2d;
    GemmInputQuantizer quantizer;
    quantizer.setRecipes(OperandRecipes::all(GemmRecipe::Nvfp4), options);
    const std::string layer = "0.linear";
    const GemmInputCall call{*backend, layer, true, 7, 1, observer};
    return {quantizer.prepare(call, w, GemmPass::Forward, GemmOperand::Weight, forward).values.toFloats(),
            quantizer.prepare(call, w, GemmPass::DataGrad, GemmOperand::Weight, dataGrad).values.toFloats()};
}

} // namespace

TEST(Nvfp4Tiles, ForwardAndDataGradientReadTheSameWeight)
{
    // A linear weight [48, 64] (forward: K = 64 along rows; dgrad: K = 48 down the columns) and
    // a convolution's [32, 16, 3, 3] (forward: along the 16 input channels at each tap; dgrad:
    // along the 32 output channels).
    const Tensor linear = Tensor::fromFloats({48, 64}, heavyTailed(48 * 64, 1), DType::BF16);
    const Tensor conv = Tensor::fromFloats({32, 16, 3, 3}, heavyTailed(32 * 16 * 9, 2), DType::BF16);
    struct Case {
        const Tensor& w;
        KLayout forward, dataGrad;
        const char* name;
    };
    const Case cases[] = {{linear, KLayout::rows(48, 64), KLayout::along(1, 48, 64), "linear"},
                          {conv, KLayout::along(32, 16, 9), KLayout::along(1, 32, 16 * 9), "conv2d"}};
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        Sink sink;
        const WeightPair fast = throughGemms(c.w, c.forward, c.dataGrad, RecipeSwitch::Auto, nullptr);
        const WeightPair measured = throughGemms(c.w, c.forward, c.dataGrad, RecipeSwitch::Auto, &sink);
        expectSameBits(fast.forward, fast.dataGrad, "forward against dgrad");
        expectSameBits(measured.forward, fast.forward, "measuring path against the fast path");
        expectSameBits(measured.dataGrad, fast.dataGrad, "measuring path against the fast path (dgrad)");
        EXPECT_EQ(sink.formats, (std::vector<std::string>{"e2m1 nvfp4/16x16", "e2m1 nvfp4/16x16"}));
        // With 1x16 blocks along K the two GEMMs read different weights: the test can fail.
        const WeightPair blocks = throughGemms(c.w, c.forward, c.dataGrad, RecipeSwitch::Off, nullptr);
        EXPECT_NE(blocks.forward, blocks.dataGrad);
    }
    // The linear weight's tiles are the reference's.
    expectSameBits(
        throughGemms(linear, KLayout::rows(48, 64), KLayout::along(1, 48, 64), RecipeSwitch::On, nullptr).forward,
        referenceTiles(linear.toFloats(), 48, 64), "linear weight against the reference");
    // The convolution's: at each of the 9 taps, the [32 out, 16 in] matrix in 16x16 tiles under
    // the whole weight's tensor scale.
    const std::vector<float> w = conv.toFloats();
    float amax = 0.0f;
    for (const float v : w)
        amax = std::max(amax, std::abs(v));
    const std::vector<float> got =
        throughGemms(conv, KLayout::along(32, 16, 9), KLayout::along(1, 32, 16 * 9), RecipeSwitch::On, nullptr).forward;
    for (std::size_t tap = 0; tap < 9; ++tap) {
        std::vector<float> matrix(32 * 16), gotMatrix(32 * 16);
        for (std::size_t o = 0; o < 32; ++o)
            for (std::size_t i = 0; i < 16; ++i) {
                matrix[o * 16 + i] = w[(o * 16 + i) * 9 + tap];
                gotMatrix[o * 16 + i] = got[(o * 16 + i) * 9 + tap];
            }
        expectSameBits(gotMatrix, referenceTiles(matrix, 32, 16, nullptr, amax),
                       "conv weight at tap " + std::to_string(tap));
    }
}

TEST(HadamardTransform, IsOrthogonalAndIsTheMatrixItApplies)
{
    const std::uint16_t signs = hadamardSigns(5);
    std::array<float, 256> q{};
    hadamardMatrix(signs, q);
    // Q Q^T = I exactly: entries are +-1/4, so every product and partial sum is exact.
    for (std::size_t i = 0; i < 16; ++i)
        for (std::size_t j = 0; j < 16; ++j) {
            float dot = 0.0f;
            for (std::size_t k = 0; k < 16; ++k)
                dot += q[i * 16 + k] * q[j * 16 + k];
            ASSERT_EQ(dot, i == j ? 1.0f : 0.0f) << i << ", " << j;
        }
    // The butterflies apply Q: the transform of e_j is column j.
    for (std::size_t j = 0; j < 16; ++j) {
        std::array<float, 16> e{};
        e[j] = 1.0f;
        hadamardTransformRow(e, signs);
        for (std::size_t i = 0; i < 16; ++i)
            ASSERT_EQ(e[i], q[i * 16 + j]) << i << ", " << j;
    }
    // And a general vector, within fp32 rounding of the matrix product in double.
    std::vector<float> v = heavyTailed(16, 4);
    const std::vector<float> before = v;
    hadamardTransformRow(v, signs);
    for (std::size_t i = 0; i < 16; ++i) {
        double want = 0, magnitude = 0;
        for (std::size_t k = 0; k < 16; ++k) {
            want += static_cast<double>(q[i * 16 + k]) * before[k];
            magnitude += std::abs(static_cast<double>(q[i * 16 + k]) * before[k]);
        }
        EXPECT_NEAR(v[i], want, 4 * std::ldexp(magnitude, -24)) << i;
    }
}

TEST(HadamardTransform, CancelsInTheWeightGradientProduct)
{
    // dW = dy^T x with K = 64 rows; both rotated along K: the product is unchanged up to fp32
    // rounding (four butterfly stages of additions per operand).
    const std::int64_t rows = 64 + 5, out = 8, in = 12; // 5: a short last group, left unrotated
    const std::vector<float> dy = heavyTailed(static_cast<std::size_t>(rows * out), 5);
    const std::vector<float> x = heavyTailed(static_cast<std::size_t>(rows * in), 6);
    std::vector<float> dyR = dy, xR = x;
    const std::uint16_t signs = hadamardSigns(11);
    rotateAlongK(dyR, KLayout::along(1, rows, out), signs);
    rotateAlongK(xR, KLayout::along(1, rows, in), signs);
    for (std::int64_t r = 64; r < rows; ++r) // the partial group is untouched
        for (std::int64_t o = 0; o < out; ++o)
            ASSERT_EQ(dyR[static_cast<std::size_t>(r * out + o)], dy[static_cast<std::size_t>(r * out + o)]);
    EXPECT_NE(dyR, dy);
    for (std::int64_t o = 0; o < out; ++o)
        for (std::int64_t i = 0; i < in; ++i) {
            double exact = 0, rotated = 0, magnitude = 0;
            for (std::int64_t r = 0; r < rows; ++r) {
                const auto a = static_cast<std::size_t>(r * out + o), b = static_cast<std::size_t>(r * in + i);
                exact += static_cast<double>(dy[a]) * x[b];
                rotated += static_cast<double>(dyR[a]) * xR[b];
                magnitude += std::abs(static_cast<double>(dy[a])) * std::abs(static_cast<double>(x[b]));
            }
            // Each rotated value is within 4 ulp-steps of its exact rotation; 16 values feed it.
            EXPECT_NEAR(rotated, exact, 16 * 8 * std::ldexp(magnitude, -24)) << o << ", " << i;
        }
    // A convolution-like layout (K across images and pixels for each channel) cancels too.
    std::vector<float> a = heavyTailed(4 * 3 * 8, 7), b = heavyTailed(4 * 2 * 8, 8);
    const std::vector<float> a0 = a, b0 = b;
    rotateAlongK(a, KLayout::around(4, 3, 8), signs);
    rotateAlongK(b, KLayout::around(4, 2, 8), signs);
    for (int ca = 0; ca < 3; ++ca)
        for (int cb = 0; cb < 2; ++cb) {
            double exact = 0, rotated = 0, magnitude = 0;
            for (int n = 0; n < 4; ++n)
                for (int p = 0; p < 8; ++p) {
                    const auto ia = static_cast<std::size_t>((n * 3 + ca) * 8 + p),
                               ib = static_cast<std::size_t>((n * 2 + cb) * 8 + p);
                    exact += static_cast<double>(a0[ia]) * b0[ib];
                    rotated += static_cast<double>(a[ia]) * b[ib];
                    magnitude += std::abs(static_cast<double>(a0[ia]) * b0[ib]);
                }
            EXPECT_NEAR(rotated, exact, 16 * 8 * std::ldexp(magnitude, -24));
        }
}

// K down columns (a weight-gradient input [batch, features], K the batch) is rotated in place
// column by column: the bits of transposing, rotating each row and transposing back, with
// several outer planes and a short last group of K (48 + 5), which stays as it is.
TEST(HadamardTransform, ColumnsGiveTheRowsBits)
{
    constexpr std::int64_t outer = 3, k = 53, inner = 40;
    const std::uint16_t signs = hadamardSigns(11);
    std::vector<float> v = heavyTailed(static_cast<std::size_t>(outer * k * inner), 12);
    std::vector<float> want = v;
    for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t i = 0; i < inner; ++i) {
            std::vector<float> row(static_cast<std::size_t>(k));
            for (std::int64_t kk = 0; kk < k; ++kk)
                row[static_cast<std::size_t>(kk)] = want[static_cast<std::size_t>((o * k + kk) * inner + i)];
            hadamardTransformRow(row, signs);
            for (std::int64_t kk = 0; kk < k; ++kk)
                want[static_cast<std::size_t>((o * k + kk) * inner + i)] = row[static_cast<std::size_t>(kk)];
        }
    const std::vector<float> before = v;
    rotateAlongK(v, KLayout::along(outer, k, inner), signs);
    ASSERT_EQ(v.size(), want.size());
    for (std::size_t j = 0; j < v.size(); ++j)
        ASSERT_EQ(std::bit_cast<std::uint32_t>(v[j]), std::bit_cast<std::uint32_t>(want[j])) << j;
    EXPECT_NE(v, before);
    // The short last group of each plane is untouched.
    for (std::int64_t kk = 48; kk < k; ++kk)
        EXPECT_EQ(v[static_cast<std::size_t>((2 * k + kk) * inner + 7)],
                  before[static_cast<std::size_t>((2 * k + kk) * inner + 7)]);
}

TEST(HadamardTransform, SignsFollowTheSeed)
{
    EXPECT_EQ(hadamardSigns(42), hadamardSigns(42));
    std::set<std::uint16_t> seen;
    for (std::uint64_t seed = 0; seed < 64; ++seed)
        seen.insert(hadamardSigns(seed));
    EXPECT_GT(seen.size(), 60u); // 64 seeds, 65536 sign vectors: distinct but for a rare collision
    std::vector<float> a = heavyTailed(64, 1), b = a;
    hadamardTransformRow(a, hadamardSigns(1));
    hadamardTransformRow(b, hadamardSigns(2));
    EXPECT_NE(a, b);
}

TEST(HadamardTransform, RotatesOnlyTheLinearWeightGradientInputs)
{
    RecipeOptions options;
    EXPECT_TRUE(rotatesWeightGradient(GemmRecipe::Nvfp4, options));
    EXPECT_FALSE(rotatesWeightGradient(GemmRecipe::Mxfp4, options));
    options.hadamardWgrad = RecipeSwitch::Off;
    EXPECT_FALSE(rotatesWeightGradient(GemmRecipe::Nvfp4, options));
    options.hadamardWgrad = RecipeSwitch::On;
    EXPECT_TRUE(rotatesWeightGradient(GemmRecipe::Mxfp8, options));
    const RecipeOptions defaults;
    for (const GemmPass pass : {GemmPass::Forward, GemmPass::DataGrad})
        EXPECT_FALSE(operandFormat(GemmRecipe::Nvfp4, pass, GemmOperand::Gradient, defaults, true).hadamard);
    EXPECT_TRUE(operandFormat(GemmRecipe::Nvfp4, GemmPass::WeightGrad, GemmOperand::Gradient, defaults, true).hadamard);
    EXPECT_FALSE(
        operandFormat(GemmRecipe::Nvfp4, GemmPass::WeightGrad, GemmOperand::Gradient, defaults, false).hadamard);
    EXPECT_EQ(operandFormatLabel(
                  operandFormat(GemmRecipe::Nvfp4, GemmPass::WeightGrad, GemmOperand::Gradient, defaults, true)),
              "e2m1 nvfp4/16 sr rht");
}

namespace {

using test::meanOf;

std::vector<float> trainLosses(const RunConfig& config)
{
    const test::TrainedRun run = test::trainRecordingLosses(config);
    EXPECT_EQ(run.summary.status, RunStatus::Finished);
    return run.losses;
}

} // namespace

TEST(Nvfp4Recipe, TrainsWithTheOptionsOnAndOff)
{
    // The 64-32 and 32-32 layers quantised (keep_first_last off); the last layer's 4 logits are
    // not a multiple of 16, so its own override keeps it in bf16.
    std::vector<std::vector<float>> runs;
    for (const RecipeSwitch option : {RecipeSwitch::On, RecipeSwitch::Off}) {
        SCOPED_TRACE(std::string(enumKey(option)));
        RunConfig c = test_support::smallSyntheticConfig(PrecisionMode::Nvfp4);
        c.recipe.weightBlocks2d = option;
        c.recipe.hadamardWgrad = option;
        c.model.layers[3].precision = LayerPrecision::Bf16; // 4 logits: not a multiple of 16
        c.recipe.keepFirstLast = RecipeSwitch::Off;
        const std::vector<float> losses = trainLosses(c);
        const std::size_t n = losses.size();
        ASSERT_GE(n, 24u);
        EXPECT_LT(meanOf(losses, n - 4, n), 0.5 * meanOf(losses, 0, 4));
        EXPECT_EQ(trainLosses(c), losses); // bit for bit, the Hadamard signs included
        runs.push_back(losses);
    }
    EXPECT_NE(runs[0], runs[1]); // the options change the numbers
}

TEST(Nvfp4Recipe, OptionsReadAndWriteInTheConfig)
{
    const RunConfig parsed = parseRunConfig(
        R"({"model": {"layers": []}, "precision": {"mode": "nvfp4", "recipe": {"weight_blocks_2d": "off", "hadamard_wgrad": "on"}}})",
        "t");
    EXPECT_EQ(parsed.recipe.weightBlocks2d, RecipeSwitch::Off);
    EXPECT_EQ(parsed.recipe.hadamardWgrad, RecipeSwitch::On);
    EXPECT_EQ(parseRunConfig(runConfigToJson(parsed), "t").recipe, parsed.recipe);
    EXPECT_EQ(operandFormat(GemmRecipe::Nvfp4, GemmOperand::Weight, parsed.recipe).format.blockRows, 1u);
    EXPECT_EQ(operandFormat(GemmRecipe::Nvfp4, GemmOperand::Weight, RecipeOptions{}).format.blockRows, 16u);
    EXPECT_EQ(operandFormat(GemmRecipe::Mxfp4, GemmOperand::Weight, RecipeOptions{}).format.blockRows, 1u);
    try {
        parseRunConfig(
            R"({"model": {"layers": []}, "precision": {"mode": "nvfp4", "recipe": {"hadamard_wgrad": "yes"}}})", "t");
        FAIL() << "hadamard_wgrad \"yes\" accepted";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("precision.recipe.hadamard_wgrad"), std::string::npos) << e.what();
    }
}
