// The shadow error track: the three measures against values worked out by hand, the fp32 pass
// against the run's own step (exact in an fp32 run, of fp16's order in mixed fp16), nested
// layers of residual and transformer blocks named and compared, training untouched by it, and
// a bad interval refused.
#include "engine/backend/backend.h"
#include "engine/config/presets.h"
#include "engine/lens/shadow_summary.h"
#include "engine/numerics/shadow_error.h"
#include "engine/train/trainer.h"
#include "engine/util/check.h"
#include "small_run_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace mantissa;

namespace {

using test_support::layerSpec;

// ---- the measures ----

TEST(ShadowErrorMeasures, AgreeWithHandWorkedValues)
{
    // c = (1, 2, 3), r = (1, 2, 2): c - r = (0, 0, 1), |r|^2 = 9, |c|^2 = 14, c.r = 11.
    const std::vector<float> c{1, 2, 3}, r{1, 2, 2};
    const ErrorEnergies e = measureError(c, r);
    EXPECT_EQ(e.count, 3);
    EXPECT_EQ(e.nonFinite, 0);
    EXPECT_DOUBLE_EQ(e.relativeRms(), 1.0 / 3.0);
    EXPECT_DOUBLE_EQ(e.cosine(), 11.0 / std::sqrt(126.0));
    EXPECT_NEAR(e.sqnrDb(), 9.5424250943932487, 1e-12); // 10 log10(9)
}

TEST(ShadowErrorMeasures, RelativeRmsAndSqnrAreOneMeasureInTwoUnits)
{
    // c = r (1 + 1e-3) everywhere: relative RMS 1e-3, SQNR 60 dB, cosine 1.
    std::vector<float> r(1000), c(1000);
    for (std::size_t i = 0; i < r.size(); ++i) {
        r[i] = std::sin(0.37f * static_cast<float>(i)) + 0.1f;
        c[i] = static_cast<float>(static_cast<double>(r[i]) * (1 + 1e-3));
    }
    const ErrorEnergies e = measureError(c, r);
    EXPECT_NEAR(e.relativeRms(), 1e-3, 1e-7);
    EXPECT_NEAR(e.sqnrDb(), 60.0, 1e-3);
    EXPECT_NEAR(e.cosine(), 1.0, 1e-12);
}

TEST(ShadowErrorMeasures, UnscalesTheComparedTensor)
{
    // A gradient scaled by 1024 compares exactly with its unscaled reference.
    const std::vector<float> scaled{1024, -2048, 512}, r{1, -2, 0.5f};
    const ErrorEnergies e = measureError(scaled, r, 1.0 / 1024);
    EXPECT_EQ(e.relativeRms(), 0.0);
    EXPECT_EQ(e.cosine(), 1.0);
    EXPECT_EQ(e.sqnrDb(), std::numeric_limits<double>::infinity());
}

TEST(ShadowErrorMeasures, OppositeDirectionsHaveCosineMinusOne)
{
    const std::vector<float> c{-1, -2}, r{1, 2};
    const ErrorEnergies e = measureError(c, r);
    EXPECT_DOUBLE_EQ(e.cosine(), -1.0);
    EXPECT_DOUBLE_EQ(e.relativeRms(), 2.0);                // |c - r| = 2 |r|
    EXPECT_DOUBLE_EQ(e.sqnrDb(), -10.0 * std::log10(4.0)); // -6.02 dB
}

TEST(ShadowErrorMeasures, ZeroTensors)
{
    const std::vector<float> zero{0, 0}, one{0, 1};
    const ErrorEnergies both = measureError(zero, zero);
    EXPECT_EQ(both.relativeRms(), 0.0);
    EXPECT_EQ(both.cosine(), 1.0);
    EXPECT_EQ(both.sqnrDb(), std::numeric_limits<double>::infinity());
    // A reference of zeros and a tensor that is not: the error has nothing to be relative to.
    const ErrorEnergies off = measureError(one, zero);
    EXPECT_EQ(off.relativeRms(), std::numeric_limits<double>::infinity());
    EXPECT_EQ(off.cosine(), 0.0);
    EXPECT_EQ(off.sqnrDb(), -std::numeric_limits<double>::infinity());
    // A tensor flushed to zero against a reference that is not: all signal lost.
    const ErrorEnergies flushed = measureError(zero, one);
    EXPECT_EQ(flushed.relativeRms(), 1.0);
    EXPECT_EQ(flushed.cosine(), 0.0);
    EXPECT_EQ(flushed.sqnrDb(), 0.0);
}

TEST(ShadowErrorMeasures, NonFiniteValuesMakeEveryMeasureNaN)
{
    const std::vector<float> c{1, std::numeric_limits<float>::infinity(), 2}, r{1, 1, 2};
    const ErrorEnergies e = measureError(c, r);
    EXPECT_EQ(e.nonFinite, 1);
    EXPECT_EQ(e.reference, 5.0); // the finite pairs are still summed
    EXPECT_TRUE(std::isnan(e.relativeRms()));
    EXPECT_TRUE(std::isnan(e.cosine()));
    EXPECT_TRUE(std::isnan(e.sqnrDb()));
}

// ---- the ranking over a run ----

ShadowError errorOf(const std::string& tensor, ShadowTensor kind, double relativeRms, bool nonFinite = false)
{
    // reference 1, error relativeRms^2: the relative RMS error is relativeRms.
    ShadowError e;
    e.layer = tensor;
    e.tensor = tensor;
    e.kind = kind;
    e.energies.count = 1;
    e.energies.nonFinite = nonFinite ? 1 : 0;
    e.energies.reference = 1;
    e.energies.compared = 1;
    e.energies.error = relativeRms * relativeRms;
    e.energies.dot = 1;
    return e;
}

TEST(ShadowSummary, RanksByMeanRelativeErrorWithTheWorstStep)
{
    ShadowRecord a, b;
    a.step = 10;
    b.step = 20;
    a.errors = {errorOf("x", ShadowTensor::Output, 1e-3), errorOf("y", ShadowTensor::Output, 4e-3),
                errorOf("z", ShadowTensor::WeightGrad, 0, true)};
    b.errors = {errorOf("x", ShadowTensor::Output, 5e-3), errorOf("y", ShadowTensor::Output, 1e-3),
                errorOf("z", ShadowTensor::WeightGrad, 0, true)};
    const std::vector<ShadowTensorSummary> ranked = rankShadowTensors({a, b});
    ASSERT_EQ(ranked.size(), 3u);
    EXPECT_EQ(ranked[0].tensor, "x"); // mean 3e-3 > y's 2.5e-3
    EXPECT_NEAR(ranked[0].meanRelativeRms, 3e-3, 1e-15);
    EXPECT_NEAR(ranked[0].worstRelativeRms, 5e-3, 1e-15);
    EXPECT_EQ(ranked[0].worstStep, 20);
    EXPECT_NEAR(ranked[0].meanSqnrDb(), -20 * std::log10(3e-3), 1e-9);
    EXPECT_DOUBLE_EQ(ranked[0].meanReferenceRms, 1.0); // sum r^2 = 1 over one element, both steps
    EXPECT_DOUBLE_EQ(ranked[0].meanComparedRms, 1.0);
    EXPECT_EQ(ranked[1].tensor, "y");
    EXPECT_EQ(ranked[1].worstStep, 10);
    // Only non-finite steps: no measure, ranked last.
    EXPECT_EQ(ranked[2].tensor, "z");
    EXPECT_EQ(ranked[2].nonFiniteSteps, 2);
    EXPECT_TRUE(std::isnan(ranked[2].meanRelativeRms));
    EXPECT_TRUE(std::isnan(ranked[2].meanReferenceRms));
    // One kind only.
    EXPECT_EQ(rankShadowTensors({a, b}, ShadowTensor::WeightGrad).size(), 1u);
}

TEST(ShadowSummary, MeanRmsOfTheReferenceAndTheRunPerElement)
{
    // A gradient that is zero in exact arithmetic: fp32 leaves rounding noise (RMS 1e-9 and
    // 3e-9 over 4 elements), the run a larger one (RMS 1e-6 and 2e-6).
    ShadowRecord a, b;
    a.step = 1;
    b.step = 2;
    ShadowError e = errorOf("key.bias", ShadowTensor::WeightGrad, 0);
    e.energies.count = 4;
    e.energies.reference = 4 * 1e-18;
    e.energies.compared = 4 * 1e-12;
    a.errors = {e};
    e.energies.reference = 4 * 9e-18;
    e.energies.compared = 4 * 4e-12;
    b.errors = {e};
    const std::vector<ShadowTensorSummary> ranked = rankShadowTensors({a, b});
    ASSERT_EQ(ranked.size(), 1u);
    EXPECT_NEAR(ranked[0].meanReferenceRms, 2e-9, 1e-24);
    EXPECT_NEAR(ranked[0].meanComparedRms, 1.5e-6, 1e-21);
}

// ---- in the trainer ----

struct Recorder final : TrainingObserver {
    std::vector<StepRecord> steps;
    std::vector<ShadowRecord> shadows;
    std::vector<NumericsRecord> numerics;
    void onStep(const StepRecord& r) override { steps.push_back(r); }
    void onShadow(const ShadowRecord& r) override { shadows.push_back(r); }
    void onNumerics(const NumericsRecord& r) override { numerics.push_back(r); }
};

struct Trained {
    RunSummary summary;
    Recorder recorder;
};

Trained train(const RunConfig& config)
{
    auto backend = makeCpuBackend(1);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    Trainer trainer(config, *backend, data);
    Trained t;
    trainer.addObserver(&t.recorder);
    t.summary = trainer.run();
    return t;
}

// The small MLP with a dropout layer and a residual block holding a batch norm: every kind of
// layer state the shadow must replay (a mask, batch statistics) or leave alone (running ones).
RunConfig blockConfig(PrecisionMode mode, int shadowEvery)
{
    RunConfig c = test_support::smallSyntheticConfig(mode);
    LayerSpec residual = layerSpec(LayerKind::Residual);
    residual.body = {layerSpec(LayerKind::Linear, 32, Activation::Relu), layerSpec(LayerKind::BatchNorm),
                     layerSpec(LayerKind::Linear, 32)};
    LayerSpec dropout = layerSpec(LayerKind::Dropout);
    dropout.rate = 0.25f;
    c.model.layers = {layerSpec(LayerKind::Flatten), layerSpec(LayerKind::Linear, 32, Activation::Relu), dropout,
                      residual, layerSpec(LayerKind::Linear, 4)};
    c.training.maxSteps = 12;
    c.numerics.shadowEvery = shadowEvery;
    return c;
}

const ShadowError* find(const ShadowRecord& r, ShadowTensor kind, const std::string& tensor)
{
    for (const ShadowError& e : r.errors)
        if (e.kind == kind && e.tensor == tensor)
            return &e;
    return nullptr;
}

TEST(ShadowTrack, OfAnFp32RunIsExactOnEveryTensorOfEveryLayer)
{
    // The fp32 pass of an fp32 run is the run's own step again: the same weights, batch, dropout
    // mask and batch statistics give the same bits, so every measure is at its exact value. This
    // is what the shadow of an fp32 run reports, and the proof that the fp32 pass replays the step.
    const Trained t = train(blockConfig(PrecisionMode::Fp32, 4));
    ASSERT_EQ(t.summary.status, RunStatus::Finished);
    ASSERT_EQ(t.recorder.shadows.size(), 3u);
    EXPECT_EQ(t.recorder.shadows[0].step, 4);
    EXPECT_EQ(t.recorder.shadows[2].step, 12);
    for (const ShadowRecord& r : t.recorder.shadows) {
        ASSERT_FALSE(r.errors.empty());
        for (const ShadowError& e : r.errors) {
            SCOPED_TRACE(e.tensor + " " + shadowTensorName(e.kind));
            EXPECT_GT(e.energies.count, 0);
            EXPECT_EQ(e.energies.relativeRms(), 0.0);
            EXPECT_EQ(e.energies.cosine(), 1.0);
            EXPECT_EQ(e.energies.sqnrDb(), std::numeric_limits<double>::infinity());
        }
    }
    // Layers inside the residual block have rows of their own, weight gradients by parameter.
    const ShadowRecord& r = t.recorder.shadows[0];
    EXPECT_NE(find(r, ShadowTensor::Output, "3.residual.1.batchnorm"), nullptr);
    EXPECT_NE(find(r, ShadowTensor::InputGrad, "3.residual.0.linear"), nullptr);
    EXPECT_NE(find(r, ShadowTensor::WeightGrad, "3.residual.2.linear.weight"), nullptr);
    EXPECT_NE(find(r, ShadowTensor::Output, "2.dropout"), nullptr);
    // The first layer computes no input gradient (nothing needs the data's), so it has no row.
    EXPECT_EQ(find(r, ShadowTensor::InputGrad, "1.linear"), nullptr);
    EXPECT_NE(find(r, ShadowTensor::WeightGrad, "1.linear.weight"), nullptr);
}

// The bits of every step's loss and gradient norm, and the final test loss.
std::vector<std::uint32_t> trainingBits(const Trained& t)
{
    std::vector<std::uint32_t> bits;
    const auto add = [&](float v) {
        std::uint32_t b;
        std::memcpy(&b, &v, sizeof b);
        bits.push_back(b);
    };
    for (const StepRecord& s : t.recorder.steps) {
        add(s.loss);
        add(s.gradNorm);
        add(s.lossScale);
    }
    add(t.summary.testLoss);
    return bits;
}

TEST(ShadowTrack, LeavesTrainingBitForBitUnchanged)
{
    for (const PrecisionMode mode : {PrecisionMode::MixedFp16, PrecisionMode::MixedBf16, PrecisionMode::Mxfp8}) {
        SCOPED_TRACE(precisionModeName(mode));
        const Trained off = train(blockConfig(mode, 0));
        const Trained on = train(blockConfig(mode, 3));
        EXPECT_TRUE(off.recorder.shadows.empty());
        EXPECT_EQ(on.recorder.shadows.size(), 4u);
        EXPECT_EQ(trainingBits(on), trainingBits(off));
    }
}

TEST(ShadowTrack, BesideTheNumericsLensOnTheSameSteps)
{
    // The lens widens weight gradients to fp32 during backward on its steps; the shadow compares
    // the 16-bit gradients the step really used, so its figures do not depend on the lens.
    RunConfig c = blockConfig(PrecisionMode::MixedFp16, 4);
    const Trained alone = train(c);
    c.numerics.every = 4;
    const Trained both = train(c);
    EXPECT_EQ(both.recorder.numerics.size(), 3u);
    ASSERT_EQ(both.recorder.shadows.size(), alone.recorder.shadows.size());
    EXPECT_EQ(trainingBits(both), trainingBits(alone));
    for (std::size_t s = 0; s < alone.recorder.shadows.size(); ++s) {
        const auto& a = alone.recorder.shadows[s].errors;
        const auto& b = both.recorder.shadows[s].errors;
        ASSERT_EQ(a.size(), b.size());
        for (std::size_t i = 0; i < a.size(); ++i)
            EXPECT_EQ(a[i].energies.error, b[i].energies.error) << a[i].tensor;
    }
}

// The mlp preset's model (784-1024-1024-10) on synthetic data of its shape.
RunConfig mlpConfig(PrecisionMode mode)
{
    RunConfig c = presetConfig("mlp");
    c.data.dataset = DatasetKind::Synthetic;
    c.data.syntheticShape = c.model.input;
    c.data.syntheticClasses = 10;
    c.data.syntheticTrain = 1280;
    c.data.syntheticTest = 128;
    c.training.threads = 1;
    c.training.maxSteps = 10;
    c.precision = mode;
    c.numerics.shadowEvery = 5;
    return c;
}

TEST(ShadowTrack, MixedFp16OnMlpErrsByFp16sRounding)
{
    const Trained t = train(mlpConfig(PrecisionMode::MixedFp16));
    ASSERT_EQ(t.recorder.shadows.size(), 2u);
    for (const ShadowRecord& r : t.recorder.shadows) {
        EXPECT_EQ(r.lossScale, 65536.0f);
        for (const ShadowError& e : r.errors) {
            SCOPED_TRACE(e.tensor + " " + shadowTensorName(e.kind));
            const double rel = e.energies.relativeRms();
            if (e.kind == ShadowTensor::Output) {
                // fp16 keeps 11 significant bits: one rounding is 2^-11 / sqrt(3) = 2.8e-4 relative
                // RMS (the input's, 2.1e-4 on these values), and a layer adds its own roundings.
                // Measured 2.07e-4 to 4.46e-4.
                EXPECT_GT(rel, 1.5e-4);
                EXPECT_LT(rel, 7e-4);
            } else {
                // Gradients err more: a ReLU whose input lies within fp16's rounding of zero passes
                // a gradient in one pass and not in the other, and the errors grow layer by layer
                // towards the input. Measured 8.6e-4 (the last layer) to 2.7e-2 (the first).
                EXPECT_GT(rel, 5e-4);
                EXPECT_LT(rel, 5e-2);
            }
            // One measure in two units: SQNR = -20 log10(relative RMS).
            EXPECT_NEAR(e.energies.sqnrDb(), -20.0 * std::log10(rel), 1e-9);
            EXPECT_GT(e.energies.cosine(), 0.999);
            EXPECT_LT(e.energies.cosine(), 1.0);
        }
    }
}

TEST(ShadowTrack, ReachesEveryNodeOfATransformerBlock)
{
    RunConfig c = presetConfig("char-gpt");
    c.model.input = {16};
    c.data.context = 16;
    c.model.layers.erase(c.model.layers.begin() + 3, c.model.layers.begin() + 6); // one block
    c.training.batchSize = 8;
    c.training.threads = 1;
    c.training.maxSteps = 2;
    c.precision = PrecisionMode::MixedBf16;
    c.numerics.shadowEvery = 2;
    const Trained t = train(c);
    ASSERT_EQ(t.summary.status, RunStatus::Finished) << t.summary.message;
    ASSERT_EQ(t.recorder.shadows.size(), 1u);
    const ShadowRecord& r = t.recorder.shadows[0];
    std::vector<std::string> outputs;
    for (const ShadowError& e : r.errors)
        if (e.kind == ShadowTensor::Output)
            outputs.push_back(e.tensor);
    for (const char* inside :
         {"2.transformer.norm1", "2.transformer.attention", "2.transformer.norm2", "2.transformer.mlp"}) {
        SCOPED_TRACE(inside);
        EXPECT_NE(std::find(outputs.begin(), outputs.end(), inside), outputs.end());
        EXPECT_NE(find(r, ShadowTensor::InputGrad, inside), nullptr);
    }
    // The attention's projections run inside its node: each has its weight gradient compared.
    EXPECT_NE(find(r, ShadowTensor::WeightGrad, "2.transformer.attention.query.weight"), nullptr);
    for (const ShadowError& e : r.errors) {
        SCOPED_TRACE(e.tensor + " " + shadowTensorName(e.kind));
        // The key's bias moves every score of a query alike, which the softmax ignores: its true
        // gradient is zero, both passes hold rounding noise, and the relative error is huge.
        if (e.tensor == "2.transformer.attention.key.bias") {
            EXPECT_GT(e.energies.relativeRms(), 1.0);
            continue;
        }
        EXPECT_GT(e.energies.relativeRms(), 0.0); // bf16 rounds everything
        EXPECT_LT(e.energies.relativeRms(), 0.1);
    }
}

TEST(ShadowTrack, IntervalOutsideItsRangeIsAConfigError)
{
    const std::string base =
        R"({"name": "t", "model": {"input": [4], "classes": 2, "layers": [{"type": "linear", "units": 2}]}, )";
    for (const auto& [value, message] :
         {std::pair{"-1", "t.json: numerics.shadow_every must be 0 to 1000 steps (got -1)"},
          std::pair{"1001", "t.json: numerics.shadow_every must be 0 to 1000 steps (got 1001)"}}) {
        try {
            parseRunConfig(base + R"("numerics": {"shadow_every": )" + value + "}}", "t.json");
            FAIL() << "expected a ConfigError for " << value;
        } catch (const ConfigError& e) {
            EXPECT_STREQ(e.what(), message);
        }
    }
    EXPECT_EQ(parseRunConfig(base + R"("numerics": {"shadow_every": 10}})", "t.json").numerics.shadowEvery, 10);
    // Off by default, and then not written, so that stored configs read back byte for byte.
    EXPECT_EQ(runConfigToJson(RunConfig{}).find("shadow_every"), std::string::npos);
}

} // namespace
