// The numerics lens inside the trainer: statistics on sampled steps only, training
// unchanged by sampling, the grad amax of every step, pure fp16's underflow against
// mixed fp16's, and the overflow's location on skipped steps.
#include "engine/backend/backend.h"
#include "engine/train/trainer.h"
#include "engine/util/check.h"
#include "small_run_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace mantissa;

namespace {

using test_support::layerSpec;

RunConfig smallConfig(PrecisionMode mode, int every)
{
    RunConfig c = test_support::smallSyntheticConfig(mode);
    c.numerics.every = every;
    return c;
}

// A deep-mlp in miniature: sigmoid blocks shrink the gradient at every layer, so the
// first layers' weight gradients fall below fp16's range.
RunConfig deepConfig(PrecisionMode mode)
{
    RunConfig c = smallConfig(mode, 5);
    c.model.input = {64};
    c.data.syntheticShape = {64};
    c.model.layers = {};
    for (int i = 0; i < 8; ++i)
        c.model.layers.push_back(layerSpec(LayerKind::Linear, 32, Activation::Sigmoid));
    c.model.layers.push_back(layerSpec(LayerKind::Linear, 4));
    c.optimizer.type = OptimizerKind::Adam;
    c.optimizer.lr = 1e-3f;
    c.training.maxSteps = 10;
    return c;
}

struct Recorder final : TrainingObserver {
    std::vector<StepRecord> steps;
    std::vector<EventRecord> events;
    std::vector<NumericsRecord> numerics;
    void onStep(const StepRecord& r) override { steps.push_back(r); }
    void onEvent(const EventRecord& e) override { events.push_back(e); }
    void onNumerics(const NumericsRecord& n) override { numerics.push_back(n); }
};

struct TrainedRun {
    RunSummary summary;
    Recorder recorder;
    // The last step's gradients as the backward left them (loss-scaled, in the layers' type):
    // the optimizer may unscale them as it reads them, writing no fp32 copy.
    std::vector<float> lastGradients;
};

TrainedRun train(const RunConfig& config)
{
    auto backend = makeCpuBackend(config.training.threads);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    Trainer trainer(config, *backend, data);
    TrainedRun run;
    trainer.addObserver(&run.recorder);
    run.summary = trainer.run();
    for (const Parameter* p : trainer.model().parametersInBackwardOrder())
        for (float g : p->grad.toFloats())
            run.lastGradients.push_back(g);
    return run;
}

const TensorNumerics* find(const NumericsRecord& r, const std::string& tensor, TensorKind kind)
{
    for (const TensorNumerics& t : r.tensors)
        if (t.tensor == tensor && t.kind == kind)
            return &t;
    return nullptr;
}

const EventRecord* firstOverflow(const Recorder& r)
{
    for (const EventRecord& e : r.events)
        if (e.kind == EventKind::Overflow)
            return &e;
    return nullptr;
}

} // namespace

TEST(NumericsLens, CollectsOnSampledStepsOnly)
{
    const TrainedRun run = train(smallConfig(PrecisionMode::MixedFp16, 5));
    ASSERT_EQ(run.summary.steps, 32);
    std::vector<std::int64_t> sampled;
    for (const NumericsRecord& r : run.recorder.numerics)
        sampled.push_back(r.step);
    EXPECT_EQ(sampled, (std::vector<std::int64_t>{5, 10, 15, 20, 25, 30}));
    const NumericsRecord& r = run.recorder.numerics.front();
    EXPECT_EQ(r.lossScale, 65536.0f);
    EXPECT_FALSE(r.scaledGradients);
    // 4 activations, 2 input gradients + dlogits, 6 weights and 6 weight gradients. The first
    // linear layer computes no input gradient, and the flatten before it none either: nothing
    // below them has weights (Model::backward).
    EXPECT_EQ(r.tensors.size(), 19u);
    EXPECT_EQ(find(r, "1.linear.input_grad", TensorKind::ActivationGrad), nullptr);
    EXPECT_EQ(find(r, "0.flatten.input_grad", TensorKind::ActivationGrad), nullptr);
    ASSERT_NE(find(r, "2.linear.input_grad", TensorKind::ActivationGrad), nullptr);
    const TensorNumerics* w = find(r, "1.linear.weight", TensorKind::WeightGrad);
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->layerIndex, 1);
    EXPECT_EQ(w->layer, "1.linear");
    EXPECT_EQ(w->dtype, DType::F32) << "measured before rounding: the fp32 capture";
    EXPECT_EQ(w->target, DType::F16);
    EXPECT_EQ(w->stats.count, 32 * 64);
    ASSERT_NE(find(r, "1.linear.output", TensorKind::Activation), nullptr);
    ASSERT_NE(find(r, "3.linear.output_grad", TensorKind::ActivationGrad), nullptr);
    ASSERT_NE(find(r, "1.linear.bias", TensorKind::Weight), nullptr);
    for (std::size_t i = 1; i < r.tensors.size(); ++i)
        EXPECT_LE(r.tensors[i - 1].layerIndex, r.tensors[i].layerIndex) << "ordered by layer";
    EXPECT_TRUE(train(smallConfig(PrecisionMode::MixedFp16, 0)).recorder.numerics.empty()) << "0 = off";
}

TEST(NumericsLens, SamplingDoesNotChangeTraining)
{
    for (PrecisionMode mode : {PrecisionMode::MixedFp16, PrecisionMode::Fp16, PrecisionMode::Bf16}) {
        const TrainedRun off = train(smallConfig(mode, 0));
        const TrainedRun every = train(smallConfig(mode, 1));
        ASSERT_EQ(off.recorder.steps.size(), every.recorder.steps.size());
        for (std::size_t i = 0; i < off.recorder.steps.size(); ++i) {
            EXPECT_EQ(off.recorder.steps[i].loss, every.recorder.steps[i].loss)
                << precisionModeName(mode) << " step " << i + 1;
            EXPECT_EQ(off.recorder.steps[i].gradAmax, every.recorder.steps[i].gradAmax);
        }
    }
}

TEST(NumericsLens, UnscaledGradientHistogramsAndTheScaledOption)
{
    RunConfig config = smallConfig(PrecisionMode::MixedFp16, 4);
    config.training.maxSteps = 4;
    const TrainedRun unscaled = train(config);
    config.numerics.scaledGradients = true;
    const TrainedRun scaled = train(config);
    const TensorNumerics* u = find(unscaled.recorder.numerics.front(), "2.linear.weight", TensorKind::WeightGrad);
    const TensorNumerics* s = find(scaled.recorder.numerics.front(), "2.linear.weight", TensorKind::WeightGrad);
    ASSERT_TRUE(u && s);
    EXPECT_TRUE(scaled.recorder.numerics.front().scaledGradients);
    EXPECT_FLOAT_EQ(s->stats.amax, u->stats.amax * 65536.0f);
    EXPECT_EQ(s->stats.underflow, u->stats.underflow) << "fractions are those of the values the run stored";
}

TEST(NumericsLens, EveryStepRecordsTheUnscaledGradientAmax)
{
    RunConfig config = smallConfig(PrecisionMode::MixedFp16, 0);
    config.training.maxSteps = 7;
    const TrainedRun run = train(config);
    for (const StepRecord& s : run.recorder.steps) {
        EXPECT_TRUE(std::isfinite(s.gradAmax));
        EXPECT_GT(s.gradAmax, 0.0f);
    }
    // The unscaling's arithmetic: each value times fl(1 / scale).
    const float inverse = 1.0f / run.recorder.steps.back().lossScale;
    EXPECT_GT(run.recorder.steps.back().lossScale, 1.0f); // the gradients were scaled
    float largest = 0;
    for (float g : run.lastGradients)
        largest = std::max(largest, std::fabs(g * inverse));
    EXPECT_EQ(run.recorder.steps.back().gradAmax, largest);
}

TEST(NumericsLens, PureFp16UnderflowsMoreInTheFirstLayersThanMixedFp16)
{
    const TrainedRun pure = train(deepConfig(PrecisionMode::Fp16));
    const TrainedRun mixed = train(deepConfig(PrecisionMode::MixedFp16));
    ASSERT_EQ(pure.recorder.numerics.size(), 2u);
    ASSERT_EQ(mixed.recorder.numerics.size(), 2u);
    std::int64_t pureUnderflow = 0, mixedUnderflow = 0;
    for (std::size_t i = 0; i < 2; ++i) {
        for (const char* tensor : {"0.linear.weight", "1.linear.weight"}) {
            const TensorNumerics* p = find(pure.recorder.numerics[i], tensor, TensorKind::WeightGrad);
            const TensorNumerics* m = find(mixed.recorder.numerics[i], tensor, TensorKind::WeightGrad);
            ASSERT_TRUE(p && m);
            // Lost: flushed here (underflow) or upstream, where an activation gradient
            // flushed and left this gradient an exact zero (dense weight gradients of
            // Gaussian inputs are never exactly zero in fp32).
            const double pureLost = p->stats.fraction(p->stats.underflow + p->stats.zeros);
            const double mixedLost = m->stats.fraction(m->stats.underflow + m->stats.zeros);
            EXPECT_GT(pureLost, 0.01) << tensor;
            EXPECT_GT(pureLost, 10 * mixedLost) << tensor;
            pureUnderflow += p->stats.underflow;
            mixedUnderflow += m->stats.underflow;
        }
    }
    EXPECT_GT(pureUnderflow, 0);
    EXPECT_EQ(mixedUnderflow, 0) << "the loss scale lifts them into range";
}

TEST(NumericsLens, OverflowLocationNamesTheLayer)
{
    // 2^20: dlogits (at most 2^20 / 32 = 32768) still fits fp16, the last layer's weight
    // gradient (a sum over the batch) does not.
    for (int every : {0, 1}) {
        RunConfig config = smallConfig(PrecisionMode::MixedFp16, every);
        config.lossScale.type = LossScaleType::Static;
        config.lossScale.value = std::ldexp(1.0f, 20);
        config.training.maxSteps = 3;
        const TrainedRun run = train(config);
        const EventRecord* overflow = firstOverflow(run.recorder);
        ASSERT_NE(overflow, nullptr) << "every " << every;
        ASSERT_TRUE(overflow->location) << "every " << every;
        const OverflowLocation& where = *overflow->location;
        EXPECT_EQ(where.layerIndex, 3);
        EXPECT_EQ(where.layer, "3.linear");
        EXPECT_EQ(where.kind, TensorKind::WeightGrad);
        EXPECT_EQ(where.tensor, "3.linear.weight");
        EXPECT_GT(where.nonFiniteCount, 0);
        EXPECT_EQ(where.count, 4 * 32);
        EXPECT_GT(where.largestFinite, 1024.0f);
        EXPECT_LE(where.largestFinite, 65504.0f) << "a value fp16 holds";
        EXPECT_TRUE(std::isinf(run.recorder.steps.front().gradAmax));
    }
    // 1e9: dlogits itself overflows, before any layer's backward.
    RunConfig config = smallConfig(PrecisionMode::MixedFp16, 0);
    config.lossScale.type = LossScaleType::Static;
    config.lossScale.value = 1e9f;
    config.training.maxSteps = 1;
    const TrainedRun run = train(config);
    const EventRecord* overflow = firstOverflow(run.recorder);
    ASSERT_TRUE(overflow && overflow->location);
    EXPECT_EQ(overflow->location->tensor, "3.linear.output_grad");
    EXPECT_EQ(overflow->location->kind, TensorKind::ActivationGrad);
}

TEST(NumericsLens, ConfigFieldParsesValidatesAndRoundTrips)
{
    const std::string base = R"({"model": {"input": [4], "classes": 2, "layers": [{"type": "linear", "units": 2}]})";
    RunConfig c = parseRunConfig(base + R"(, "numerics": {"every": 100, "scaled_gradients": true}})", "t");
    EXPECT_EQ(c.numerics.every, 100);
    EXPECT_TRUE(c.numerics.scaledGradients);
    const RunConfig back = parseRunConfig(runConfigToJson(c), "t");
    EXPECT_EQ(back.numerics.every, 100);
    EXPECT_TRUE(back.numerics.scaledGradients);
    EXPECT_EQ(parseRunConfig(base + "}", "t").numerics.every, 0);
    EXPECT_THROW(parseRunConfig(base + R"(, "numerics": {"every": 1001}})", "t"), ConfigError);
    EXPECT_THROW(parseRunConfig(base + R"(, "numerics": {"every": -1}})", "t"), ConfigError);
    EXPECT_THROW(parseRunConfig(base + R"(, "numerics": {"evry": 10}})", "t"), ConfigError);
}
