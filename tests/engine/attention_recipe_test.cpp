// Attention's two batched products under precision.recipe.attention: each operand quantised in
// blocks along the product's own K (the head dimension or the sequence, by pass), the right
// operand (K, V) in the activation's 1D blocks rather than a weight's 2D tiles, and off by
// default, where the products multiply the compute type as before.
#include "engine/backend/backend.h"
#include "engine/config/presets.h"
#include "engine/model/layers/attention_product.h"
#include "engine/model/model.h"
#include "engine/numerics/block_quantizer.h"
#include "engine/numerics/conversions.h"
#include "random_tensor.h"

#include <gtest/gtest.h>

#include <map>

using namespace mantissa;

namespace {

constexpr std::int64_t kPlanes = 3, kTokens = 64, kHeadDim = 32;

// `values` ([planes, rows, cols]) quantise-dequantised in `format`'s blocks along the rows of
// each plane (transposed first), or along its columns: what a GEMM reads with K there.
std::vector<float> blocked(const std::vector<float>& values, std::int64_t rows, std::int64_t cols, bool alongRows,
                           const QuantFormat& format)
{
    std::vector<float> out(values.size());
    if (!alongRows) {
        quantizeDequantize(values, out, static_cast<std::size_t>(cols), format);
        return out;
    }
    std::vector<float> t(values.size()), tq(values.size());
    for (std::int64_t p = 0; p < kPlanes; ++p)
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t c = 0; c < cols; ++c)
                t[static_cast<std::size_t>((p * cols + c) * rows + r)] =
                    values[static_cast<std::size_t>((p * rows + r) * cols + c)];
    quantizeDequantize(t, tq, static_cast<std::size_t>(rows), format);
    for (std::int64_t p = 0; p < kPlanes; ++p)
        for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t c = 0; c < cols; ++c)
                out[static_cast<std::size_t>((p * rows + r) * cols + c)] =
                    tq[static_cast<std::size_t>((p * cols + c) * rows + r)];
    return out;
}

Tensor bf16Tensor(const std::vector<float>& values, const Shape& shape)
{
    return Tensor::fromFloats(shape, values, DType::BF16);
}

// `count` random values that are bf16 numbers, so that a bf16 tensor holds them exactly.
std::vector<float> bf16Values(std::size_t count, std::uint32_t seed)
{
    std::vector<float> v = test_support::randomValues(count, seed);
    for (float& x : v)
        x = roundToDType(x, DType::BF16);
    return v;
}

AttentionProduct product(PrecisionMode mode, RecipeSwitch attention)
{
    RecipeOptions options;
    options.attention = attention;
    const PrecisionPolicy policy(mode, options);
    AttentionProduct p(kHeadDim, kTokens);
    p.setName("0.attention.scores");
    p.applyPrecision(policy, policy.layer());
    return p;
}

} // namespace

// The scores' forward (K = the head dimension) and its key gradient dK = dS^T Q (K = the
// queries): the product of the blocks the quantiser makes along each K, to the bit.
TEST(AttentionRecipe, ProductsQuantiseAlongTheirOwnK)
{
    auto backend = makeCpuBackend(1);
    const QuantFormat mxfp8 = operandFormat(GemmRecipe::Mxfp8, GemmOperand::Activation, {}).format;
    const std::vector<float> q = bf16Values(kPlanes * kTokens * kHeadDim, 1);
    const std::vector<float> k = bf16Values(kPlanes * kTokens * kHeadDim, 2);
    const std::vector<float> ds = bf16Values(kPlanes * kTokens * kTokens, 3);
    const Tensor tq = bf16Tensor(q, {kPlanes, kTokens, kHeadDim}), tk = bf16Tensor(k, {kPlanes, kTokens, kHeadDim});
    const Tensor tds = bf16Tensor(ds, {kPlanes, kTokens, kTokens});
    const std::int64_t headStride = kTokens * kHeadDim, planeStride = kTokens * kTokens;
    const KLayout headRows = KLayout::rows(kPlanes * kTokens, kHeadDim);
    const KLayout alongQueries = KLayout::along(kPlanes, kTokens, kHeadDim);

    AttentionProduct scores = product(PrecisionMode::Mxfp8, RecipeSwitch::On);
    ASSERT_TRUE(scores.runsGemms());
    PassState pass{*backend, true, 7, 1};
    Tensor s = backend->empty({kPlanes, kTokens, kTokens}, DType::F32);
    scores.multiply(pass, GemmPass::Forward, kTokens, kTokens, kHeadDim, 0.25f,
                    {tq, headStride, Transpose::No, headRows}, GemmOperand::Activation,
                    {tk, headStride, Transpose::Yes, headRows}, GemmOperand::Weight, s, planeStride, kPlanes);
    Tensor sRef = backend->empty({kPlanes, kTokens, kTokens}, DType::F32);
    backend->gemmStridedBatched(Transpose::No, Transpose::Yes, kTokens, kTokens, kHeadDim, 0.25f,
                                bf16Tensor(blocked(q, kTokens, kHeadDim, false, mxfp8), tq.shape()), headStride,
                                bf16Tensor(blocked(k, kTokens, kHeadDim, false, mxfp8), tk.shape()), headStride, 0.0f,
                                sRef, planeStride, kPlanes);
    EXPECT_EQ(s.toFloats(), sRef.toFloats());

    Tensor dk = backend->empty({kPlanes, kTokens, kHeadDim}, DType::F32);
    scores.multiply(pass, GemmPass::WeightGrad, kTokens, kHeadDim, kTokens, 0.25f,
                    {tds, planeStride, Transpose::Yes, KLayout::along(kPlanes, kTokens, kTokens)},
                    GemmOperand::Gradient, {tq, headStride, Transpose::No, alongQueries}, GemmOperand::Activation, dk,
                    headStride, kPlanes);
    Tensor dkRef = backend->empty({kPlanes, kTokens, kHeadDim}, DType::F32);
    backend->gemmStridedBatched(Transpose::Yes, Transpose::No, kTokens, kHeadDim, kTokens, 0.25f,
                                bf16Tensor(blocked(ds, kTokens, kTokens, true, mxfp8), tds.shape()), planeStride,
                                bf16Tensor(blocked(q, kTokens, kHeadDim, true, mxfp8), tq.shape()), headStride, 0.0f,
                                dkRef, headStride, kPlanes);
    EXPECT_EQ(dk.toFloats(), dkRef.toFloats());
    // Quantising changed the product: the check above compares something.
    Tensor plain = backend->empty({kPlanes, kTokens, kTokens}, DType::F32);
    backend->gemmStridedBatched(Transpose::No, Transpose::Yes, kTokens, kTokens, kHeadDim, 0.25f, tq, headStride, tk,
                                headStride, 0.0f, plain, planeStride, kPlanes);
    EXPECT_NE(s.toFloats(), plain.toFloats());

    // Off (the default) the product multiplies its inputs as they are.
    AttentionProduct off = product(PrecisionMode::Mxfp8, RecipeSwitch::Auto);
    EXPECT_FALSE(off.runsGemms());
    Tensor sOff = backend->empty({kPlanes, kTokens, kTokens}, DType::F32);
    off.multiply(pass, GemmPass::Forward, kTokens, kTokens, kHeadDim, 0.25f, {tq, headStride, Transpose::No, headRows},
                 GemmOperand::Activation, {tk, headStride, Transpose::Yes, headRows}, GemmOperand::Weight, sOff,
                 planeStride, kPlanes);
    EXPECT_EQ(sOff.toFloats(), plain.toFloats());
}

// Records the format and the block count of each GEMM input the product quantises.
class FormatTap final : public LayerTap {
public:
    void afterForward(std::size_t, const Tensor&) override {}
    void afterBackward(std::size_t, const Tensor&) override {}
    bool measuresGemmInputs() const override { return true; }
    void gemmInput(const std::string&, GemmPass, GemmOperand operand, const OperandFormat& format,
                   const QuantStats& stats) override
    {
        labels[operand] = operandFormatLabel(format);
        blocks[operand] = stats.blocks;
    }
    std::map<GemmOperand, std::string> labels;
    std::map<GemmOperand, std::size_t> blocks;
};

// K (the product's "weight" operand) is an activation: under fp8-block it takes 1x128 blocks
// along K, not a weight's 128x128 tiles, and under nvfp4 1x16 blocks, not 16x16 tiles.
TEST(AttentionRecipe, TheRightOperandTakesTheActivationsBlocks)
{
    auto backend = makeCpuBackend(1);
    for (const PrecisionMode mode : {PrecisionMode::Fp8Block, PrecisionMode::Nvfp4}) {
        SCOPED_TRACE(precisionModeName(mode));
        const GemmRecipe recipe = PrecisionPolicy(mode).recipe();
        // A product applies no per-block scales, so fp8-block's tile scales are powers of two.
        const OperandFormat activation =
            withScaleRounding(operandFormat(recipe, GemmOperand::Activation, {}), {}, false);
        ASSERT_NE(operandFormatLabel(activation), operandFormatLabel(operandFormat(recipe, GemmOperand::Weight, {})));
        const std::size_t n = static_cast<std::size_t>(kPlanes * kTokens * kHeadDim);
        const Tensor tq = bf16Tensor(test_support::randomValues(n, 4), {kPlanes, kTokens, kHeadDim});
        const Tensor tk = bf16Tensor(test_support::randomValues(n, 5), {kPlanes, kTokens, kHeadDim});
        AttentionProduct scores = product(mode, RecipeSwitch::On);
        FormatTap tap;
        PassState pass{*backend, false, 7, 1};
        pass.tap = &tap;
        const std::int64_t headStride = kTokens * kHeadDim;
        const KLayout headRows = KLayout::rows(kPlanes * kTokens, kHeadDim);
        Tensor s = backend->empty({kPlanes, kTokens, kTokens}, DType::F32);
        scores.multiply(pass, GemmPass::Forward, kTokens, kTokens, kHeadDim, 1.0f,
                        {tq, headStride, Transpose::No, headRows}, GemmOperand::Activation,
                        {tk, headStride, Transpose::Yes, headRows}, GemmOperand::Weight, s, kTokens * kTokens, kPlanes);
        EXPECT_EQ(tap.labels[GemmOperand::Weight], operandFormatLabel(activation));
        EXPECT_EQ(tap.labels[GemmOperand::Activation], operandFormatLabel(activation));
        // One block per row of 32 for fp8-block's 128 (a short block), two of 16 for nvfp4.
        const std::size_t perRow = mode == PrecisionMode::Fp8Block ? 1 : 2;
        EXPECT_EQ(tap.blocks[GemmOperand::Weight], static_cast<std::size_t>(kPlanes * kTokens) * perRow);
    }
}

// In a model: the products join the GEMMs the recipe covers, by name, only when asked.
TEST(AttentionRecipe, ModelsCoverTheProductsOnlyWhenAsked)
{
    RunConfig c = presetConfig("char-gpt");
    const GemmCoverage off = plannedGemmCoverage(c.model, PrecisionMode::Mxfp8, c.recipe);
    EXPECT_EQ(off.gemms.size(), 25u);
    c.recipe.attention = RecipeSwitch::On;
    const GemmCoverage on = plannedGemmCoverage(c.model, PrecisionMode::Mxfp8, c.recipe);
    EXPECT_EQ(on.summary(), "mxfp8: 33 of 33 GEMMs quantised");
    EXPECT_EQ(on.gemms[3].layer, "2.transformer.attention.scores");
    EXPECT_EQ(on.gemms[4].layer, "2.transformer.attention.context");
    EXPECT_EQ(on.gemms[5].layer, "2.transformer.attention.output");
    // Without a recipe the switch means nothing: the projections and the head, none quantised.
    const GemmCoverage bf16 = plannedGemmCoverage(c.model, PrecisionMode::MixedBf16, c.recipe);
    EXPECT_EQ(bf16.gemms.size(), 25u);
    EXPECT_EQ(bf16.quantisedCount(), 0u);
}
