// The numerics lens for block formats (issue 17): on a sampled step the probe receives, for every
// quantised GEMM input, the statistics of its quantisation, and they equal those the block
// quantiser gives for the same operand computed directly; sampling does not change training
// (the measured slow path gives the fast path's bits); and non-finite values are told apart,
// Inf from NaN.
#include "engine/backend/backend.h"
#include "engine/data/dataset.h"
#include "engine/lens/numerics_probe.h"
#include "engine/model/model.h"
#include "engine/numerics/block_quantizer.h"
#include "engine/numerics/conversions.h"
#include "engine/numerics/hadamard_transform.h"
#include "engine/numerics/tensor_stats.h"
#include "engine/train/trainer.h"
#include "small_run_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

using namespace mantissa;

namespace {

constexpr PrecisionMode kRecipes[] = {PrecisionMode::Fp8Hybrid, PrecisionMode::Fp8E4m3, PrecisionMode::Fp8Block,
                                      PrecisionMode::Mxfp8,     PrecisionMode::Mxfp6,   PrecisionMode::Mxfp4,
                                      PrecisionMode::Nvfp4};

// An MLP on 128 features whose first two linear layers are quantised (keep_first_last off; the
// last, 4 wide, stays bf16 by an override, as NVFP4 cannot block 4), fed bf16 values with
// outliers, so that blocks clip and small values flush.
RunConfig lensConfig(PrecisionMode mode)
{
    RunConfig c = test_support::smallSyntheticConfig(mode);
    c.model.input = {128};
    c.data.syntheticShape = {128};
    c.model.layers = {test_support::layerSpec(LayerKind::Linear, 64, Activation::Relu),
                      test_support::layerSpec(LayerKind::Linear, 32, Activation::Relu),
                      test_support::layerSpec(LayerKind::Linear, 4)};
    c.model.layers[2].precision = LayerPrecision::Bf16;
    c.recipe.keepFirstLast = RecipeSwitch::Off;
    return c;
}

std::vector<float> heavyTailed(std::size_t n, std::uint32_t seed)
{
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v)
        x = roundToDType(normal(gen) * (uniform(gen) < 0.05f ? 40.0f : 1.0f), DType::BF16);
    return v;
}

std::vector<float> transpose(const std::vector<float>& m, std::int64_t rows, std::int64_t cols)
{
    std::vector<float> t(m.size());
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c)
            t[static_cast<std::size_t>(c * rows + r)] = m[static_cast<std::size_t>(r * cols + c)];
    return t;
}

// What the block quantiser itself says about `values` as rows of `rowLength` (0: one tensor).
QuantStats direct(const std::vector<float>& values, std::size_t rowLength, const QuantFormat& format)
{
    const QuantizedTensor q = quantize(values, rowLength, format);
    std::vector<float> out(values.size());
    dequantize(q, out);
    return measureQuantization(values, q, out);
}

void expectSame(const QuantStats& lens, const QuantStats& want)
{
    EXPECT_EQ(lens.elements, want.elements);
    EXPECT_EQ(lens.blocks, want.blocks);
    EXPECT_EQ(lens.clippedBlocks, want.clippedBlocks);
    EXPECT_EQ(lens.flushedToZero, want.flushedToZero);
    EXPECT_EQ(lens.nonFinite, want.nonFinite);
    EXPECT_EQ(lens.scaleExponents, want.scaleExponents);
    // The same values and codes; the double sums may be added in another order (last bits).
    EXPECT_NEAR(lens.signalEnergy, want.signalEnergy, 1e-12 * want.signalEnergy);
    EXPECT_NEAR(lens.noiseEnergy, want.noiseEnergy, 1e-12 * want.noiseEnergy);
    EXPECT_GT(want.noiseEnergy, 0.0);
}

const GemmInputNumerics* find(const std::vector<GemmInputNumerics>& inputs, const std::string& layer, GemmPass pass,
                              GemmOperand operand)
{
    for (const GemmInputNumerics& g : inputs)
        if (g.layer == layer && g.pass == pass && g.operand == operand)
            return &g;
    return nullptr;
}

} // namespace

TEST(GemmInputLens, StatsMatchTheQuantiserOnTheSameOperand)
{
    auto backend = makeCpuBackend(1);
    constexpr std::int64_t batch = 32, in = 128;
    for (const PrecisionMode mode : kRecipes) {
        SCOPED_TRACE(precisionModeName(mode));
        const RunConfig c = lensConfig(mode);
        Model model(c.model, c.precision, *backend, 5, c.recipe);
        Layer& first = *model.layers()[0];
        ASSERT_TRUE(first.quantisesGemms());
        const std::vector<float> x = heavyTailed(static_cast<std::size_t>(batch * in), 3);
        const std::vector<float> w = first.parameters()[0]->working.toFloats();

        ProbeSettings settings;
        settings.gemmInputs = true;
        NumericsProbe probe(model, *backend, settings);
        PassState pass{*backend, true, 42, 1};
        pass.tap = &probe;
        ModelForward forward = model.forward(pass, Tensor::fromFloats({batch, in}, x, DType::F32));
        Tensor dlogits = backend->empty(forward.logits.shape(), forward.logits.dtype());
        backend->fill(dlogits, 0.01f);
        model.backward(pass, dlogits, forward);

        // The two quantised layers: forward (activation, weight), dgrad (gradient, weight) except
        // in the first layer, which computes no dx, and wgrad (gradient, activation).
        const NumericsRecord record = probe.record(1);
        EXPECT_EQ(record.gemmInputs.size(), 4u + 6u);
        EXPECT_EQ(record.gemmInputs.front().layer, "0.linear");
        EXPECT_EQ(record.gemmInputs.front().pass, GemmPass::Forward);
        EXPECT_EQ(record.gemmInputs.back().layer, "1.linear");
        EXPECT_EQ(record.gemmInputs.back().layerIndex, 1);
        EXPECT_EQ(find(record.gemmInputs, "0.linear", GemmPass::DataGrad, GemmOperand::Weight), nullptr);

        const GemmRecipe recipe = first.gemmRecipes().activation;
        const OperandFormat fa = operandFormat(recipe, GemmOperand::Activation, c.recipe);
        const OperandFormat fw = operandFormat(recipe, GemmOperand::Weight, c.recipe);
        const auto blockedRows = [](const OperandFormat& f, std::int64_t k) {
            return f.format.isBlocked() ? static_cast<std::size_t>(k) : std::size_t(0);
        };
        const GemmInputNumerics* act = find(record.gemmInputs, "0.linear", GemmPass::Forward, GemmOperand::Activation);
        ASSERT_NE(act, nullptr);
        EXPECT_EQ(act->format, operandFormatLabel(fa));
        expectSame(act->stats, direct(x, blockedRows(fa, in), fa.format));
        EXPECT_GT(act->stats.sqnrDb(), 0.0);

        // The weight [out, in] along K = in; fp8-block's 128x128 tile is the whole matrix.
        const GemmInputNumerics* weight = find(record.gemmInputs, "0.linear", GemmPass::Forward, GemmOperand::Weight);
        ASSERT_NE(weight, nullptr);
        // NVFP4's 16x16 tiles: the lens counts tiles (fw.format.blockRows) and says so.
        EXPECT_EQ(weight->format, operandFormatLabel(fw));
        expectSame(weight->stats, direct(w, fw.tile2d > 0 ? 0 : blockedRows(fw, in), fw.format));

        // The weight gradient's activation runs along K = batch: x transposed, and under nvfp4
        // rotated by the random Hadamard transform (the pass seed's signs) before quantising:
        // the lens measures the values the GEMM reads against the rotated fp32 values.
        const GemmInputNumerics* xT =
            find(record.gemmInputs, "0.linear", GemmPass::WeightGrad, GemmOperand::Activation);
        ASSERT_NE(xT, nullptr);
        const OperandFormat faW = operandFormat(recipe, GemmPass::WeightGrad, GemmOperand::Activation, c.recipe, true);
        EXPECT_EQ(faW.hadamard, recipe == GemmRecipe::Nvfp4);
        EXPECT_EQ(xT->format, operandFormatLabel(faW));
        std::vector<float> xRows = transpose(x, batch, in);
        if (faW.hadamard)
            for (std::size_t r = 0; r < static_cast<std::size_t>(in); ++r)
                hadamardTransformRow(std::span(xRows).subspan(r * batch, batch), hadamardSigns(42));
        expectSame(xT->stats, direct(xRows, blockedRows(fa, batch), fa.format));
    }
}

TEST(GemmInputLens, MxFloorClipsWhereCeilDoesNot)
{
    // OCP MX's floor rule rounds the block scale down and clips a block whose largest value
    // lies above the element's largest times that scale; ceil never clips. The lens shows both.
    auto backend = makeCpuBackend(1);
    std::size_t clipped[2] = {};
    for (const MxScaleRule rule : {MxScaleRule::Floor, MxScaleRule::Ceil}) {
        RunConfig c = lensConfig(PrecisionMode::Mxfp4);
        c.recipe.scaleRule = rule;
        Model model(c.model, c.precision, *backend, 5, c.recipe);
        ProbeSettings settings;
        settings.gemmInputs = true;
        NumericsProbe probe(model, *backend, settings);
        PassState pass{*backend, false, 42, 1};
        pass.tap = &probe;
        model.forward(pass, Tensor::fromFloats({32, 128}, heavyTailed(32 * 128, 9), DType::F32));
        const GemmInputNumerics* act = find(probe.gemmInputs(), "0.linear", GemmPass::Forward, GemmOperand::Activation);
        ASSERT_NE(act, nullptr);
        EXPECT_EQ(act->stats.blocks, 32u * 128u / 32u);
        clipped[rule == MxScaleRule::Ceil] = act->stats.clippedBlocks;
    }
    EXPECT_GT(clipped[0], 0u);
    EXPECT_EQ(clipped[1], 0u);
}

namespace {

struct Recorder final : TrainingObserver {
    std::vector<float> losses;
    std::vector<NumericsRecord> numerics;
    void onStep(const StepRecord& r) override { losses.push_back(r.loss); }
    void onNumerics(const NumericsRecord& n) override { numerics.push_back(n); }
};

Recorder train(const RunConfig& config)
{
    auto backend = makeCpuBackend(CpuOptions{1, config.training.cpuKernels});
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    Trainer trainer(config, *backend, data);
    Recorder recorder;
    trainer.addObserver(&recorder);
    EXPECT_EQ(trainer.run().status, RunStatus::Finished);
    return recorder;
}

} // namespace

TEST(GemmInputLens, SampledStepsCarryTheGemmInputsAndDoNotChangeTraining)
{
    for (const PrecisionMode mode : {PrecisionMode::Mxfp4, PrecisionMode::Nvfp4, PrecisionMode::Fp8Delayed}) {
        SCOPED_TRACE(precisionModeName(mode));
        RunConfig c = lensConfig(mode);
        c.training.maxSteps = 12;
        const Recorder plain = train(c);
        c.numerics.every = 4;
        const Recorder sampled = train(c);
        // Measuring takes the slow quantiser on sampled steps: it must give the fast one's bits.
        EXPECT_EQ(sampled.losses, plain.losses);
        ASSERT_EQ(sampled.numerics.size(), 3u);
        for (const NumericsRecord& r : sampled.numerics) {
            EXPECT_EQ(r.gemmInputs.size(), 10u) << "step " << r.step;
            for (const GemmInputNumerics& g : r.gemmInputs) {
                EXPECT_GT(g.stats.elements, 0u);
                EXPECT_GT(g.stats.blocks, 0u);
                EXPECT_FALSE(g.format.empty());
            }
        }
    }
    // A 16-bit run quantises nothing: its records have no GEMM inputs.
    RunConfig bf16 = lensConfig(PrecisionMode::MixedBf16);
    bf16.training.maxSteps = 4;
    bf16.numerics.every = 2;
    for (const NumericsRecord& r : train(bf16).numerics)
        EXPECT_TRUE(r.gemmInputs.empty());
}

// Every recipe, every step sampled (the slow quantiser throughout) against none sampled (the
// fast one): the same losses bit for bit, on the native kernels (auto) and the emulated ones.
TEST(GemmInputLens, SamplingEveryStepGivesTheFastPathsLossesUnderEveryRecipe)
{
    for (const CpuKernels kernels : {CpuKernels::Auto, CpuKernels::Emulated})
        for (const PrecisionMode mode :
             {PrecisionMode::Fp8Hybrid, PrecisionMode::Fp8E4m3, PrecisionMode::Fp8Delayed, PrecisionMode::Fp8Block,
              PrecisionMode::Mxfp8, PrecisionMode::Mxfp6, PrecisionMode::Mxfp4, PrecisionMode::Nvfp4}) {
            SCOPED_TRACE(precisionModeName(mode) + (kernels == CpuKernels::Auto ? ", auto" : ", emulated"));
            RunConfig c = lensConfig(mode);
            c.training.maxSteps = 6;
            c.training.cpuKernels = kernels;
            const Recorder plain = train(c);
            c.numerics.every = 1;
            const Recorder sampled = train(c);
            ASSERT_EQ(sampled.numerics.size(), 6u);
            EXPECT_EQ(sampled.losses, plain.losses);
        }
}

TEST(GemmInputLens, NonFiniteValuesTellInfFromNan)
{
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> values{1.0f, inf, -inf, nan, 0.0f, -nan};
    const TensorStats s = measureValues(values.data(), values.size(), DType::F16);
    EXPECT_EQ(s.nonFinite, 4);
    EXPECT_EQ(s.nan, 2);
    EXPECT_EQ(describeNonFinite(s.nonFinite, s.nan), "2 Inf, 2 NaN");
    EXPECT_EQ(describeNonFinite(3, 0), "3 Inf");
    EXPECT_EQ(describeNonFinite(2, 2), "2 NaN");
    EXPECT_EQ(describeNonFinite(5, -1), "5 Inf or NaN");

    const std::vector<std::uint16_t> halves{0x3c00, 0x7c00, 0xfc00, 0x7e00}; // 1, +Inf, -Inf, NaN in fp16
    const TensorStats h = measure16BitValues(halves.data(), halves.size(), DType::F16, DType::F16);
    EXPECT_EQ(h.nonFinite, 3);
    EXPECT_EQ(h.nan, 1);

    std::vector<float> out(values.size());
    const QuantStats q = quantizeDequantize(values, out, 0, *quantFormatNamed("e4m3"));
    EXPECT_EQ(q.nonFinite, 4u);
    EXPECT_EQ(q.nanInputs, 2u);
}
