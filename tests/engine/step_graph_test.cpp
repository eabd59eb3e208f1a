// The trainer's graph path on the CPU: the step recorded once on a tape (what a CUDA graph
// is on a GPU) and replayed must train bit for bit as the same step run op by op, through
// overflows, loss-scale changes, a changing learning rate, clipping, Adam's corrections,
// batch norm and residual blocks. A value baked into the recording that should change from
// step to step would show here as a diverging curve.
#include "engine/backend/backend.h"
#include "engine/train/trainer.h"
#include "small_run_config.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>

using namespace mantissa;

namespace {

LayerSpec layer(const std::string& type, std::int64_t size = 0, const std::string& activation = "")
{
    LayerSpec l;
    l.type = type;
    l.units = type == "linear" ? size : 0;
    l.filters = type == "conv2d" ? size : 0;
    l.activation = activation;
    if (type == "maxpool")
        l.kernel = 2;
    return l;
}

RunConfig mlpConfig(PrecisionMode mode)
{
    RunConfig c = test_support::smallSyntheticConfig(mode);
    c.name = "graph";
    return c;
}

// conv + batch norm + pooling + a residual block with batch norm inside.
RunConfig convConfig(PrecisionMode mode)
{
    RunConfig c = mlpConfig(mode);
    LayerSpec residual = layer("residual");
    residual.body = {layer("conv2d", 8, "relu"), layer("batchnorm")};
    residual.body[0].padding = 1;
    LayerSpec conv = layer("conv2d", 8);
    conv.padding = 1;
    c.model.layers = {conv, layer("batchnorm"), layer("relu"), residual, layer("maxpool"), layer("flatten"),
                      layer("linear", 4)};
    c.training.epochs = 1;
    return c;
}

struct Recorder final : TrainingObserver {
    std::vector<StepRecord> steps;
    std::vector<EventRecord> events;
    void onStep(const StepRecord& r) override { steps.push_back(r); }
    void onEvent(const EventRecord& e) override { events.push_back(e); }
};

struct TrainedRun {
    RunSummary summary;
    Recorder recorder;
    std::string graphStatus;
    std::int64_t graphSteps = 0, eagerSteps = 0;
};

TrainedRun train(RunConfig config, bool graphs)
{
    config.training.graphs = graphs ? "on" : "off";
    auto backend = makeCpuBackend(config.training.threads);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    Trainer trainer(config, *backend, data);
    TrainedRun run;
    trainer.addObserver(&run.recorder);
    run.summary = trainer.run();
    run.graphStatus = trainer.graphStatus();
    run.graphSteps = trainer.graphSteps();
    run.eagerSteps = trainer.eagerSteps();
    return run;
}

std::uint32_t bits(float v) { return std::bit_cast<std::uint32_t>(v); }

void expectIdentical(const TrainedRun& graph, const TrainedRun& eager)
{
    ASSERT_EQ(graph.recorder.steps.size(), eager.recorder.steps.size());
    for (std::size_t i = 0; i < graph.recorder.steps.size(); ++i) {
        const StepRecord& g = graph.recorder.steps[i];
        const StepRecord& e = eager.recorder.steps[i];
        SCOPED_TRACE("step " + std::to_string(e.step));
        ASSERT_EQ(bits(g.loss), bits(e.loss));
        ASSERT_EQ(bits(g.lossScale), bits(e.lossScale));
        ASSERT_EQ(bits(g.learningRate), bits(e.learningRate));
        ASSERT_EQ(g.skipped, e.skipped);
        ASSERT_EQ(bits(g.gradNorm), bits(e.gradNorm));
        ASSERT_EQ(bits(g.gradAmax), bits(e.gradAmax));
    }
    ASSERT_EQ(graph.recorder.events.size(), eager.recorder.events.size());
    for (std::size_t i = 0; i < graph.recorder.events.size(); ++i) {
        const EventRecord& g = graph.recorder.events[i];
        const EventRecord& e = eager.recorder.events[i];
        EXPECT_EQ(g.kind, e.kind);
        EXPECT_EQ(g.step, e.step);
        EXPECT_EQ(g.parameter, e.parameter);
        EXPECT_EQ(g.location.has_value(), e.location.has_value());
        if (g.location && e.location) {
            EXPECT_EQ(g.location->tensor, e.location->tensor);
        }
    }
    EXPECT_EQ(bits(graph.summary.testAccuracy), bits(eager.summary.testAccuracy));
    EXPECT_EQ(bits(graph.summary.finalLossScale), bits(eager.summary.finalLossScale));
}

} // namespace

TEST(StepGraph, ReplayedStepsTrainExactlyAsStepsRunOpByOp)
{
    // Overflows at the start (scale 1e9 backs off), a cosine schedule with warm-up (the rate
    // changes every step), clipping that bites, momentum.
    RunConfig config = mlpConfig(PrecisionMode::MixedFp16);
    config.lossScale.type = "dynamic";
    config.lossScale.initial = 1e9f;
    config.lossScale.maxScale = 1e9f;
    config.lossScale.growthInterval = 7;
    config.lossScale.hysteresis = 2;
    config.schedule.type = "cosine";
    config.schedule.warmupSteps = 5;
    config.optimizer.gradClipNorm = 0.5f;
    const TrainedRun graph = train(config, true);
    const TrainedRun eager = train(config, false);
    EXPECT_EQ(graph.graphStatus, "captured at step 2");
    EXPECT_EQ(graph.eagerSteps, 1);
    EXPECT_EQ(graph.graphSteps, graph.summary.steps - 1);
    EXPECT_EQ(eager.graphStatus, "training.graphs is off");
    EXPECT_EQ(eager.graphSteps, 0);
    ASSERT_GT(eager.summary.skippedSteps, 2) << "the test needs overflows";
    EXPECT_EQ(graph.summary.skippedSteps, eager.summary.skippedSteps);
    expectIdentical(graph, eager);
}

TEST(StepGraph, AdamInPureFp16WithStaticScaleReplaysExactly)
{
    // Adam's bias corrections change every step taken and stand still on a skipped one.
    RunConfig config = mlpConfig(PrecisionMode::Fp16);
    config.optimizer.type = "adamw";
    config.optimizer.lr = 0.003f;
    config.optimizer.weightDecay = 0.01f;
    config.lossScale.type = "static";
    config.lossScale.value = 16;
    const TrainedRun graph = train(config, true);
    const TrainedRun eager = train(config, false);
    EXPECT_EQ(graph.graphStatus, "captured at step 2");
    EXPECT_LT(eager.summary.skippedSteps, eager.summary.steps / 4) << "the test needs steps taken";
    EXPECT_GT(eager.summary.testAccuracy, 0.5f);
    expectIdentical(graph, eager);
}

TEST(StepGraph, ConvolutionsBatchNormAndResidualBlocksReplayExactly)
{
    for (PrecisionMode mode : {PrecisionMode::Fp32, PrecisionMode::MixedBf16}) {
        SCOPED_TRACE(precisionModeName(mode));
        const TrainedRun graph = train(convConfig(mode), true);
        const TrainedRun eager = train(convConfig(mode), false);
        EXPECT_EQ(graph.graphStatus, "captured at step 2");
        EXPECT_GT(graph.graphSteps, 10);
        expectIdentical(graph, eager);
    }
}

TEST(StepGraph, SampledStepsRunOpByOpBetweenReplays)
{
    RunConfig config = mlpConfig(PrecisionMode::MixedFp16);
    config.numerics.every = 5;
    const TrainedRun graph = train(config, true);
    const TrainedRun eager = train(config, false);
    const std::int64_t sampled = graph.summary.steps / 5;
    EXPECT_EQ(graph.eagerSteps, 1 + sampled);
    EXPECT_EQ(graph.graphSteps, graph.summary.steps - 1 - sampled);
    expectIdentical(graph, eager);
}

TEST(StepGraph, AutoLeavesTheCpuOpByOp)
{
    RunConfig config = mlpConfig(PrecisionMode::Fp32);
    config.training.graphs = "auto";
    auto backend = makeCpuBackend(1);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    Trainer trainer(config, *backend, data);
    trainer.run();
    EXPECT_EQ(trainer.graphSteps(), 0);
    EXPECT_NE(trainer.graphStatus().find("the CPU runs each op"), std::string::npos) << trainer.graphStatus();
}

TEST(StepGraph, DropoutModelsRunOpByOpAndSayWhy)
{
    RunConfig config = mlpConfig(PrecisionMode::Fp32);
    LayerSpec dropout = layer("dropout");
    dropout.rate = 0.2f;
    config.model.layers.insert(config.model.layers.begin() + 2, dropout);
    const TrainedRun run = train(config, true);
    EXPECT_EQ(run.summary.status, RunStatus::Finished);
    EXPECT_EQ(run.graphSteps, 0);
    EXPECT_NE(run.graphStatus.find("dropout"), std::string::npos) << run.graphStatus;
}
