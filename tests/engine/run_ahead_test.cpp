// Running ahead (training.run_ahead) on the CPU: each step is queued before the previous
// step's record is read. When that step turns out skipped, the step queued behind it was
// held on the device and is queued again after the overflow is located. The records, events,
// overflow locations, batch-norm statistics (through the test loss) and the end of the run
// must be those of the same run step by step.
#include "engine/backend/backend.h"
#include "engine/train/trainer.h"
#include "run_comparison.h"
#include "small_run_config.h"

#include <gtest/gtest.h>

using namespace mantissa;
using namespace mantissa::test_support;

namespace {

// Overflows from the start (scale 1e9 backs off, with hysteresis), and more later as the
// scale grows back every 7 steps.
RunConfig overflowing(RunConfig c)
{
    c.lossScale.type = LossScaleType::Dynamic;
    c.lossScale.initial = 1e9f;
    c.lossScale.maxScale = 1e9f;
    c.lossScale.growthInterval = 7;
    c.lossScale.hysteresis = 2;
    return c;
}

} // namespace

TEST(RunAhead, OverflowingRunsMatchSteppingOneAtATime)
{
    RunConfig config = overflowing(smallSyntheticConfig(PrecisionMode::MixedFp16));
    config.schedule.type = ScheduleKind::Cosine;
    config.optimizer.gradClipNorm = 0.5f;
    for (const bool graphs : {false, true}) {
        SCOPED_TRACE(graphs ? "graphs on" : "graphs off");
        const TrainedRun ahead = train(config, graphs, true);
        const TrainedRun stepwise = train(config, false, false);
        ASSERT_GT(stepwise.summary.skippedSteps, 5) << "the test needs overflows";
        // Every skipped step but one at an epoch's end had a step queued behind it.
        EXPECT_GE(ahead.requeuedSteps, stepwise.summary.skippedSteps - 2);
        EXPECT_LE(ahead.requeuedSteps, stepwise.summary.skippedSteps);
        EXPECT_EQ(stepwise.requeuedSteps, 0);
        expectIdentical(ahead, stepwise);
    }
}

TEST(RunAhead, HeldStepsLeaveBatchNormStatisticsAsTheyWere)
{
    // A held step's forward pass moves the running statistics; they are put back before the
    // overflow is located and the step queued again, or the test loss would differ.
    const RunConfig config = overflowing(smallConvConfig(PrecisionMode::MixedFp16));
    const TrainedRun ahead = train(config, true, true);
    const TrainedRun stepwise = train(config, false, false);
    ASSERT_GT(ahead.requeuedSteps, 0);
    expectIdentical(ahead, stepwise);
}

TEST(RunAhead, AdamCountsOnlyTheStepsTaken)
{
    // A step queued ahead assumes the one before it is taken; when that one is skipped, the
    // requeued step gets Adam's corrections for the count as it really is.
    RunConfig config = overflowing(smallSyntheticConfig(PrecisionMode::MixedFp16));
    config.optimizer.type = OptimizerKind::Adam;
    config.optimizer.lr = 0.003f;
    const TrainedRun ahead = train(config, false, true);
    const TrainedRun stepwise = train(config, false, false);
    ASSERT_GT(ahead.requeuedSteps, 0);
    expectIdentical(ahead, stepwise);
}

TEST(RunAhead, SampledStepsAndDivergenceEndTheSame)
{
    RunConfig sampled = overflowing(smallSyntheticConfig(PrecisionMode::MixedFp16));
    sampled.numerics.every = 3;
    expectIdentical(train(sampled, true, true), train(sampled, false, false));

    // Pure fp16 at a static scale of 2^30: every step overflows, 64 in a row end the run.
    RunConfig diverging = smallSyntheticConfig(PrecisionMode::Fp16);
    diverging.lossScale.type = LossScaleType::Static;
    diverging.lossScale.value = 1073741824.0f;
    diverging.data.syntheticTrain = 4096; // 128 steps an epoch
    const TrainedRun ahead = train(diverging, true, true);
    const TrainedRun stepwise = train(diverging, false, false);
    EXPECT_EQ(stepwise.summary.status, RunStatus::Diverged);
    EXPECT_EQ(stepwise.summary.steps, 64);
    expectIdentical(ahead, stepwise);
}

TEST(RunAhead, StopEndsAfterTheStepInFlight)
{
    RunConfig config = smallSyntheticConfig();
    config.training.runAhead = AutoSwitch::On;
    auto backend = makeCpuBackend(1);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    Trainer trainer(config, *backend, data);
    struct StopAtFive final : TrainingObserver {
        Trainer* trainer = nullptr;
        std::int64_t last = 0;
        void onStep(const StepRecord& r) override
        {
            last = r.step;
            if (r.step == 5)
                trainer->requestStop();
        }
    } observer;
    observer.trainer = &trainer;
    trainer.addObserver(&observer);
    const RunSummary summary = trainer.run();
    EXPECT_TRUE(trainer.runsAhead());
    EXPECT_EQ(summary.status, RunStatus::Stopped);
    // Step 6 was already queued when step 5's record asked to stop: it is finished and kept.
    EXPECT_EQ(summary.steps, 6);
    EXPECT_EQ(observer.last, 6);
}

TEST(RunAhead, AutoStepsOneAtATimeOnTheCpu)
{
    RunConfig config = smallSyntheticConfig();
    auto backend = makeCpuBackend(1);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    EXPECT_FALSE(Trainer(config, *backend, data).runsAhead());
    config.training.runAhead = AutoSwitch::On;
    EXPECT_TRUE(Trainer(config, *backend, data).runsAhead());
}
