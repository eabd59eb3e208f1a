// The trainer's graph path on the CPU: the step recorded once on a tape (what a CUDA graph
// is on a GPU) and replayed must train bit for bit as the same step run op by op, through
// overflows, loss-scale changes, a changing learning rate, clipping, Adam's corrections,
// batch norm and residual blocks. A value baked into the recording that should change from
// step to step would show here as a diverging curve.
#include "engine/backend/backend.h"
#include "engine/train/trainer.h"
#include "run_comparison.h"
#include "small_run_config.h"

#include <gtest/gtest.h>

using namespace mantissa;
using namespace mantissa::test_support;

namespace {

RunConfig mlpConfig(PrecisionMode mode)
{
    RunConfig c = smallSyntheticConfig(mode);
    c.name = "graph";
    return c;
}

} // namespace

TEST(StepGraph, ReplayedStepsTrainExactlyAsStepsRunOpByOp)
{
    // Overflows at the start (scale 1e9 backs off), a cosine schedule with warm-up (the rate
    // changes every step), clipping that bites, momentum.
    RunConfig config = mlpConfig(PrecisionMode::MixedFp16);
    config.lossScale.type = LossScaleType::Dynamic;
    config.lossScale.initial = 1e9f;
    config.lossScale.maxScale = 1e9f;
    config.lossScale.growthInterval = 7;
    config.lossScale.hysteresis = 2;
    config.schedule.type = ScheduleKind::Cosine;
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
    config.optimizer.type = OptimizerKind::AdamW;
    config.optimizer.lr = 0.003f;
    config.optimizer.weightDecay = 0.01f;
    config.lossScale.type = LossScaleType::Static;
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
        const TrainedRun graph = train(smallConvConfig(mode), true);
        const TrainedRun eager = train(smallConvConfig(mode), false);
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
    config.training.graphs = AutoSwitch::Auto;
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
    LayerSpec dropout = layerSpec(LayerKind::Dropout);
    dropout.rate = 0.2f;
    config.model.layers.insert(config.model.layers.begin() + 2, dropout);
    const TrainedRun run = train(config, true);
    EXPECT_EQ(run.summary.status, RunStatus::Finished);
    EXPECT_EQ(run.graphSteps, 0);
    EXPECT_NE(run.graphStatus.find("dropout"), std::string::npos) << run.graphStatus;
}
