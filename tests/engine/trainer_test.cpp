// The step loop end to end on small synthetic problems: determinism, divergence,
// overflow skipping, stop and pause, checkpoints across precisions.
#include "engine/backend/backend.h"
#include "engine/train/trainer.h"
#include "engine/util/check.h"
#include "small_run_config.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

using namespace mantissa;

namespace {

RunConfig smallConfig(PrecisionMode mode = PrecisionMode::Fp32) { return test_support::smallSyntheticConfig(mode); }

struct Recorder final : TrainingObserver {
    std::vector<StepRecord> steps;
    std::vector<EpochRecord> epochs;
    std::vector<EventRecord> events;
    std::function<void(const StepRecord&)> onEachStep;
    void onStep(const StepRecord& r) override
    {
        steps.push_back(r);
        if (onEachStep)
            onEachStep(r);
    }
    void onEpoch(const EpochRecord& r) override { epochs.push_back(r); }
    void onEvent(const EventRecord& e) override { events.push_back(e); }
    int count(EventKind kind) const
    {
        int n = 0;
        for (const auto& e : events)
            n += e.kind == kind ? 1 : 0;
        return n;
    }
};

struct TrainedRun {
    RunSummary summary;
    Recorder recorder;
};

TrainedRun train(const RunConfig& config)
{
    auto backend = makeCpuBackend(config.training.threads);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    Trainer trainer(config, *backend, data);
    TrainedRun run;
    trainer.addObserver(&run.recorder);
    run.summary = trainer.run();
    return run;
}

std::vector<float> losses(const TrainedRun& run)
{
    std::vector<float> out;
    for (const auto& s : run.recorder.steps)
        out.push_back(s.loss);
    return out;
}

} // namespace

TEST(Trainer, LearnsTheSyntheticProblemInEveryMode)
{
    for (PrecisionMode mode : {PrecisionMode::Fp32, PrecisionMode::MixedFp16, PrecisionMode::MixedBf16,
                               PrecisionMode::Fp16, PrecisionMode::Bf16}) {
        const TrainedRun run = train(smallConfig(mode));
        EXPECT_EQ(run.summary.status, RunStatus::Finished) << precisionModeName(mode);
        EXPECT_GT(run.summary.testAccuracy, 0.9f) << precisionModeName(mode);
        EXPECT_EQ(run.summary.steps, 2 * (512 / 32));
        EXPECT_EQ(run.recorder.epochs.size(), 2u);
        EXPECT_LT(run.recorder.steps.back().loss, run.recorder.steps.front().loss);
    }
}

TEST(Trainer, SameSeedGivesBitIdenticalLossCurves)
{
    for (PrecisionMode mode : {PrecisionMode::Fp32, PrecisionMode::MixedFp16}) {
        const TrainedRun a = train(smallConfig(mode));
        const TrainedRun b = train(smallConfig(mode));
        const auto la = losses(a), lb = losses(b);
        ASSERT_EQ(la.size(), lb.size());
        for (std::size_t i = 0; i < la.size(); ++i)
            ASSERT_EQ(std::bit_cast<std::uint32_t>(la[i]), std::bit_cast<std::uint32_t>(lb[i]))
                << precisionModeName(mode) << " step " << i + 1;
    }
    RunConfig other = smallConfig();
    other.training.seed = 7;
    EXPECT_NE(losses(train(smallConfig())), losses(train(other)));
}

TEST(Trainer, NonFiniteLossInFp32EndsAsDiverged)
{
    RunConfig config = smallConfig();
    config.optimizer.lr = 1e30f;
    config.optimizer.momentum = 0;
    const TrainedRun run = train(config);
    EXPECT_EQ(run.summary.status, RunStatus::Diverged);
    EXPECT_NE(run.summary.message.find("non-finite"), std::string::npos) << run.summary.message;
    EXPECT_EQ(run.recorder.count(EventKind::Divergence), 1);
    EXPECT_LT(run.summary.steps, 32);
}

TEST(Trainer, OutOfMemoryFailsTheRunNamingTheBatchSize)
{
    // 100,000 filters of 26x26 outputs at batch 128 ask for 34.6 GB in one activation: more
    // than any test machine has, so the allocation fails at once without touching memory.
    RunConfig config = smallConfig();
    config.model.input = {1, 28, 28};
    config.data.syntheticShape = {1, 28, 28};
    LayerSpec conv;
    conv.type = LayerKind::Conv2d;
    conv.filters = 100000;
    conv.kernel = 3;
    LayerSpec pool;
    pool.type = LayerKind::MaxPool;
    pool.kernel = 26;
    pool.stride = 26;
    LayerSpec flatten;
    flatten.type = LayerKind::Flatten;
    LayerSpec out;
    out.type = LayerKind::Linear;
    out.units = 4;
    config.model.layers = {conv, pool, flatten, out};
    config.training.batchSize = 128;
    const TrainedRun run = train(config);
    EXPECT_EQ(run.summary.status, RunStatus::Failed);
    EXPECT_NE(run.summary.message.find("out of host memory"), std::string::npos) << run.summary.message;
    EXPECT_NE(run.summary.message.find("batch size 128"), std::string::npos) << run.summary.message;
    ASSERT_EQ(run.recorder.count(EventKind::Error), 1);
    for (const EventRecord& e : run.recorder.events) {
        if (e.kind == EventKind::Error) {
            EXPECT_EQ(e.message, run.summary.message);
        }
    }
}

TEST(Trainer, OverflowSkipsTheStepBacksOffAndNamesTheParameter)
{
    RunConfig config = smallConfig(PrecisionMode::MixedFp16);
    config.lossScale.type = LossScaleType::Dynamic;
    config.lossScale.initial = 1e9f; // far beyond fp16: the scaled gradients must overflow
    config.lossScale.maxScale = 1e9f;
    const TrainedRun run = train(config);
    EXPECT_EQ(run.summary.status, RunStatus::Finished);
    ASSERT_GT(run.summary.skippedSteps, 0);
    const StepRecord& first = run.recorder.steps.front();
    EXPECT_TRUE(first.skipped);
    EXPECT_TRUE(std::isnan(first.gradNorm));
    const EventRecord* overflow = nullptr;
    for (const auto& e : run.recorder.events)
        if (e.kind == EventKind::Overflow && !overflow)
            overflow = &e;
    ASSERT_NE(overflow, nullptr);
    EXPECT_EQ(overflow->step, 1);
    EXPECT_EQ(overflow->scaleBefore, 1e9f);
    EXPECT_EQ(overflow->scaleAfter, 5e8f);
    // Backward produces the last layer's gradient first, so that is where it is found.
    EXPECT_EQ(overflow->parameter, "3.linear.weight");
    EXPECT_EQ(run.recorder.count(EventKind::ScaleChange), run.summary.skippedSteps);
    EXPECT_LT(run.summary.finalLossScale, 65504.0f);
    EXPECT_GT(run.summary.testAccuracy, 0.9f) << "training recovers once the scale fits";
}

TEST(Trainer, RestoredScalerStateGovernsTheNextStep)
{
    RunConfig config = smallConfig(PrecisionMode::MixedFp16);
    config.lossScale.type = LossScaleType::Dynamic;
    config.lossScale.initial = 1024.0f;
    config.lossScale.growthInterval = 1000;
    auto backend = makeCpuBackend(config.training.threads);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    Trainer trainer(config, *backend, data);
    Recorder recorder;
    // After step 3, a scale far beyond fp16 with one overflow of hysteresis left: step 4 must
    // use it, overflow, and back off from it (to half, hysteresis spent), not from 1024.
    recorder.onEachStep = [&](const StepRecord& r) {
        if (r.step == 3)
            trainer.restoreScalerState({1e9f, 0, 1});
    };
    trainer.addObserver(&recorder);
    const RunSummary summary = trainer.run();
    ASSERT_EQ(summary.status, RunStatus::Finished) << summary.message;
    ASSERT_GE(recorder.steps.size(), 5u);
    EXPECT_EQ(recorder.steps[2].lossScale, 1024.0f);
    EXPECT_FALSE(recorder.steps[2].skipped);
    EXPECT_EQ(recorder.steps[3].lossScale, 1e9f);
    EXPECT_TRUE(recorder.steps[3].skipped);
    EXPECT_EQ(recorder.steps[4].lossScale, 5e8f);
    EXPECT_EQ(trainer.scaler().kind(), LossScaler::Kind::Dynamic);
}

TEST(Trainer, StopRequestEndsTheRunAsStopped)
{
    RunConfig config = smallConfig();
    auto backend = makeCpuBackend(1);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    Trainer trainer(config, *backend, data);
    Recorder recorder;
    recorder.onEachStep = [&trainer](const StepRecord& r) {
        if (r.step == 5)
            trainer.requestStop();
    };
    trainer.addObserver(&recorder);
    const RunSummary summary = trainer.run();
    EXPECT_EQ(summary.status, RunStatus::Stopped);
    EXPECT_EQ(summary.steps, 5);
    EXPECT_EQ(recorder.count(EventKind::Finished), 1);
}

TEST(Trainer, PauseHoldsTheLoopUntilResumed)
{
    RunConfig config = smallConfig();
    auto backend = makeCpuBackend(1);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    Trainer trainer(config, *backend, data);
    std::atomic<std::int64_t> lastStep{0};
    Recorder recorder;
    recorder.onEachStep = [&](const StepRecord& r) {
        lastStep = r.step;
        if (r.step == 3)
            trainer.setPaused(true);
    };
    trainer.addObserver(&recorder);
    std::thread worker([&] { trainer.run(); });
    // Wait for the observer to pause the run: on a busy machine three steps can take longer
    // than any fixed sleep, and resuming before the pause would leave the run paused for good.
    for (int i = 0; i < 3000 && !trainer.isPaused(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!trainer.isPaused()) {
        trainer.requestStop(); // so that join() returns whatever happens next
        worker.join();
        FAIL() << "the run did not pause at step 3 within 30 s (last step " << lastStep.load() << ")";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(lastStep.load(), 3) << "no step may run while paused";
    EXPECT_TRUE(trainer.isPaused());
    trainer.setPaused(false);
    worker.join();
    EXPECT_EQ(lastStep.load(), trainer.totalSteps());
}

TEST(Trainer, Fp32CheckpointFineTunesInMixedFp16)
{
    const auto path = std::filesystem::temp_directory_path() / "mantissa-trainer-test.ckpt";
    RunConfig fp32 = smallConfig();
    auto backend = makeCpuBackend(1);
    const DatasetSplits data = loadDatasets(fp32.data, fp32.training.seed);
    float trainedAccuracy = 0;
    {
        Trainer trainer(fp32, *backend, data);
        trainer.run();
        trainedAccuracy = trainer.evaluate(data.test).accuracy;
        trainer.saveCheckpoint(path.string());
    }
    RunConfig mixed = smallConfig(PrecisionMode::MixedFp16);
    mixed.training.seed = 99; // different initial weights: the checkpoint must replace them
    Trainer fineTune(mixed, *backend, data);
    EXPECT_LT(fineTune.evaluate(data.test).accuracy, 0.5f);
    fineTune.loadCheckpoint(path.string(), true);
    EXPECT_NEAR(fineTune.evaluate(data.test).accuracy, trainedAccuracy, 0.02f);
    // A full load restores the optimizer and scaler too.
    Trainer resumed(fp32, *backend, data);
    resumed.loadCheckpoint(path.string(), false);
    EXPECT_EQ(resumed.evaluate(data.test).accuracy, trainedAccuracy);
    std::filesystem::remove(path);
}

TEST(Trainer, CorruptOrForeignCheckpointsAreRefusedWithTheReason)
{
    const auto path = std::filesystem::temp_directory_path() / "mantissa-corrupt.ckpt";
    auto backend = makeCpuBackend(1);
    RunConfig config = smallConfig();
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    Trainer trainer(config, *backend, data);
    {
        std::ofstream(path) << "not a checkpoint\n";
    }
    try {
        trainer.loadCheckpoint(path.string(), true);
        FAIL() << "loaded garbage";
    } catch (const IoError& e) {
        EXPECT_NE(std::string(e.what()).find("not a Mantissa checkpoint"), std::string::npos) << e.what();
    }
    // Saved from a model with different widths: the shape mismatch is named.
    RunConfig wider = smallConfig();
    wider.model.layers[1].units = 48;
    wider.model.layers[2].units = 48;
    Trainer other(wider, *backend, data);
    other.saveCheckpoint(path.string());
    try {
        trainer.loadCheckpoint(path.string(), true);
        FAIL() << "loaded a checkpoint of another model";
    } catch (const IoError& e) {
        EXPECT_NE(std::string(e.what()).find("has shape"), std::string::npos) << e.what();
    }
    // Truncated file.
    const auto size = std::filesystem::file_size(path);
    std::filesystem::resize_file(path, size / 2);
    try {
        other.loadCheckpoint(path.string(), true);
        FAIL() << "loaded a truncated checkpoint";
    } catch (const IoError& e) {
        EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
    }
    std::filesystem::remove(path);
}

TEST(Trainer, MismatchedDataAndModelAreConfigErrors)
{
    RunConfig config = smallConfig();
    auto backend = makeCpuBackend(1);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    config.model.input = {1, 28, 28};
    EXPECT_THROW(Trainer(config, *backend, data), ConfigError);
    config = smallConfig();
    config.training.batchSize = 100000;
    EXPECT_THROW(Trainer(config, *backend, data), ConfigError);
}
