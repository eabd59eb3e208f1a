// Per-tensor recipes quantise each tensor once per step: a linear layer's backward reads the
// forward's x and W again, and its data gradient the weight gradient's dy
// (GemmInputQuantizer::reuse, Layer::gemmInputAgain), where both GEMMs give them the same
// values. Checked against quantising anew: the same bits and decode scale, for current and
// delayed scaling; and never where a rotation, stochastic rounding, a sampled step or block
// scales make the two GEMMs' values differ.
#include "engine/backend/backend.h"
#include "engine/model/gemm_inputs.h"
#include "engine/numerics/conversions.h"

#include <gtest/gtest.h>

#include <bit>
#include <optional>
#include <random>
#include <string>

using namespace mantissa;

namespace {

Tensor randomBf16(Shape shape, std::uint32_t seed, float spread)
{
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(static_cast<std::size_t>(shape.numel()));
    for (float& x : v)
        x = roundToDType(normal(gen) * spread, DType::BF16);
    return Tensor::fromFloats(shape, v, DType::BF16);
}

struct ReadAgain {
    const char* what;
    GemmOperand operand;
    GemmPass from;
    KLayout fromLayout;
    GemmPass to;
    KLayout toLayout;
};

struct NoteEveryInput final : GemmInputObserver {
    void gemmInput(const std::string&, GemmPass, GemmOperand, const OperandFormat&, const QuantStats&) override {}
};

RecipeOptions roundToNearest()
{
    RecipeOptions o;
    o.stochasticRounding = RecipeSwitch::Off;
    return o;
}

void expectSameBits(const GemmOperandValues& got, const GemmOperandValues& want, const std::string& what)
{
    ASSERT_EQ(got.values.dtype(), want.values.dtype()) << what;
    EXPECT_EQ(std::bit_cast<std::uint32_t>(got.scale), std::bit_cast<std::uint32_t>(want.scale)) << what;
    const std::vector<float> a = got.values.toFloats(), b = want.values.toFloats();
    ASSERT_EQ(a.size(), b.size()) << what;
    for (std::size_t i = 0; i < a.size(); ++i)
        ASSERT_EQ(std::bit_cast<std::uint32_t>(a[i]), std::bit_cast<std::uint32_t>(b[i])) << what << ", value " << i;
}

} // namespace

TEST(PerTensorReuse, BackwardGemmsReadTheSameValuesAgain)
{
    auto backend = makeCpuBackend(CpuOptions{1, CpuKernels::Auto});
    const std::string layer = "2.linear";
    const std::int64_t batch = 64, in = 300, out = 200;
    const Tensor x = randomBf16({batch, in}, 1, 1.0f), w = randomBf16({out, in}, 2, 0.05f);
    const Tensor dy = randomBf16({batch, out}, 3, 1e-4f);
    const ReadAgain cases[] = {
        {"x, forward then weight gradient", GemmOperand::Activation, GemmPass::Forward, KLayout::rows(batch, in),
         GemmPass::WeightGrad, KLayout::along(1, batch, in)},
        {"W, forward then data gradient", GemmOperand::Weight, GemmPass::Forward, KLayout::rows(out, in),
         GemmPass::DataGrad, KLayout::along(1, out, in)},
        {"dy, weight gradient then data gradient", GemmOperand::Gradient, GemmPass::WeightGrad,
         KLayout::along(1, batch, out), GemmPass::DataGrad, KLayout::rows(batch, out)},
    };
    const auto tensorOf = [&](GemmOperand operand) -> const Tensor& {
        return operand == GemmOperand::Activation ? x : operand == GemmOperand::Weight ? w : dy;
    };
    for (const GemmRecipe recipe : {GemmRecipe::Fp8Hybrid, GemmRecipe::Fp8E4m3, GemmRecipe::Fp8Delayed}) {
        GemmInputQuantizer quantizer;
        quantizer.setRecipes(OperandRecipes::all(recipe), roundToNearest());
        // Delayed scaling: a first step fills the amax history, so that the second step's
        // scale is not the initial 1.
        for (const std::uint64_t step : {1u, 2u}) {
            GemmInputCall call{*backend, layer};
            call.step = step;
            call.blockScaledGemm = true; // a linear layer's GEMMs
            for (const ReadAgain& c : cases) {
                const std::string what =
                    std::string(gemmRecipeName(recipe)) + ", step " + std::to_string(step) + ": " + c.what;
                ASSERT_TRUE(quantizer.samePerTensorValues(c.from, c.to, c.operand, false)) << what;
                const Tensor& t = tensorOf(c.operand);
                const GemmOperandValues prepared = quantizer.prepare(call, t, c.from, c.operand, c.fromLayout);
                const std::optional<GemmOperandValues> again =
                    quantizer.reuse(call, prepared, c.from, t, c.to, c.operand, c.toLayout);
                ASSERT_TRUE(again.has_value()) << what;
                EXPECT_EQ(again->values.data(), prepared.values.data()) << what << ": read again, not copied";
                expectSameBits(*again, quantizer.prepare(call, t, c.to, c.operand, c.toLayout), what);
            }
        }
        if (recipe == GemmRecipe::Fp8Delayed) {
            EXPECT_NE(quantizer.delayedScale(GemmOperand::Weight), 1.0f) << "the history moved the scale";
        }
    }
}

TEST(PerTensorReuse, QuantisesAnewWhereTheGemmsValuesDiffer)
{
    auto backend = makeCpuBackend(CpuOptions{1, CpuKernels::Auto});
    const std::string layer = "2.linear";
    const Tensor x = randomBf16({64, 300}, 1, 1.0f), dy = randomBf16({64, 200}, 3, 1e-4f);
    GemmInputCall call{*backend, layer};
    call.step = 1;
    call.blockScaledGemm = true;

    // Stochastically rounded gradients: each GEMM draws its own bits.
    RecipeOptions stochastic = roundToNearest();
    stochastic.stochasticRounding = RecipeSwitch::On;
    GemmInputQuantizer hybrid;
    hybrid.setRecipes(OperandRecipes::all(GemmRecipe::Fp8Hybrid), stochastic);
    EXPECT_FALSE(hybrid.samePerTensorValues(GemmPass::WeightGrad, GemmPass::DataGrad, GemmOperand::Gradient, false));
    const GemmOperandValues dyT =
        hybrid.prepare(call, dy, GemmPass::WeightGrad, GemmOperand::Gradient, KLayout::along(1, 64, 200));
    EXPECT_FALSE(hybrid.reuse(call, dyT, GemmPass::WeightGrad, dy, GemmPass::DataGrad, GemmOperand::Gradient,
                              KLayout::rows(64, 200)));

    // The random Hadamard transform rotates the weight gradient's x only.
    RecipeOptions rotating = roundToNearest();
    rotating.hadamardWgrad = RecipeSwitch::On;
    GemmInputQuantizer e4m3;
    e4m3.setRecipes(OperandRecipes::all(GemmRecipe::Fp8E4m3), rotating);
    EXPECT_FALSE(e4m3.samePerTensorValues(GemmPass::Forward, GemmPass::WeightGrad, GemmOperand::Activation, true));
    EXPECT_TRUE(e4m3.samePerTensorValues(GemmPass::Forward, GemmPass::WeightGrad, GemmOperand::Activation, false));
    GemmInputCall rotatingCall = call;
    rotatingCall.mayRotate = true;
    const GemmOperandValues xq =
        e4m3.prepare(rotatingCall, x, GemmPass::Forward, GemmOperand::Activation, KLayout::rows(64, 300));
    EXPECT_FALSE(e4m3.reuse(rotatingCall, xq, GemmPass::Forward, x, GemmPass::WeightGrad, GemmOperand::Activation,
                            KLayout::along(1, 64, 300)));

    // A sampled step measures every GEMM input.
    GemmInputQuantizer plain;
    plain.setRecipes(OperandRecipes::all(GemmRecipe::Fp8E4m3), roundToNearest());
    NoteEveryInput observer;
    GemmInputCall sampled = call;
    sampled.observer = &observer;
    const GemmOperandValues xs =
        plain.prepare(sampled, x, GemmPass::Forward, GemmOperand::Activation, KLayout::rows(64, 300));
    EXPECT_FALSE(plain.reuse(sampled, xs, GemmPass::Forward, x, GemmPass::WeightGrad, GemmOperand::Activation,
                             KLayout::along(1, 64, 300)));

    // Block formats: their blocks run along K, which the two GEMMs run different ways.
    for (const GemmRecipe recipe : {GemmRecipe::Mxfp8, GemmRecipe::Fp8Block, GemmRecipe::Nvfp4}) {
        GemmInputQuantizer blocks;
        blocks.setRecipes(OperandRecipes::all(recipe), roundToNearest());
        EXPECT_FALSE(
            blocks.samePerTensorValues(GemmPass::Forward, GemmPass::WeightGrad, GemmOperand::Activation, false))
            << gemmRecipeName(recipe);
        const GemmOperandValues q =
            blocks.prepare(call, x, GemmPass::Forward, GemmOperand::Activation, KLayout::rows(64, 300));
        EXPECT_FALSE(blocks.reuse(call, q, GemmPass::Forward, x, GemmPass::WeightGrad, GemmOperand::Activation,
                                  KLayout::along(1, 64, 300)))
            << gemmRecipeName(recipe);
    }
    // Nothing kept from the forward (an undefined operand): prepared anew.
    EXPECT_FALSE(plain.reuse(call, GemmOperandValues{}, GemmPass::Forward, x, GemmPass::WeightGrad,
                             GemmOperand::Activation, KLayout::along(1, 64, 300)));
}
