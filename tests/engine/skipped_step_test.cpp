// A skipped step leaves no trace: no weight, optimizer or loss-scale state moves (trainer_test),
// and neither do the batch-norm running statistics its forward pass updated. Before this was
// held, one overflow in a forward pass left inf/NaN in the statistics for good, and every later
// evaluation of the run scored 10% (docs/underflow.md, deep-mlp seed 42).
#include "engine/backend/backend.h"
#include "engine/train/trainer.h"
#include "small_run_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <vector>

using namespace mantissa;

namespace {

using Buffers = std::map<std::string, std::vector<float>>;

Buffers readBuffers(Trainer& trainer, Backend& backend)
{
    Buffers out;
    for (auto& [name, tensor] : trainer.model().buffers()) {
        std::vector<float> values(static_cast<std::size_t>(tensor->numel()));
        backend.download(*tensor, values.data());
        out[name] = std::move(values);
    }
    return out;
}

bool bitEqual(const Buffers& a, const Buffers& b)
{
    if (a.size() != b.size())
        return false;
    for (const auto& [name, values] : a) {
        const auto other = b.find(name);
        if (other == b.end() || other->second.size() != values.size() ||
            std::memcmp(values.data(), other->second.data(), values.size() * sizeof(float)) != 0)
            return false;
    }
    return true;
}

// The buffers after every step, and which steps were skipped.
struct BufferWatch final : TrainingObserver {
    Trainer* trainer = nullptr;
    Backend* backend = nullptr;
    std::vector<Buffers> after;
    std::vector<bool> skipped;
    void onStep(const StepRecord& r) override
    {
        after.push_back(readBuffers(*trainer, *backend));
        skipped.push_back(r.skipped);
    }
};

struct WatchedRun {
    Buffers initial;
    BufferWatch watch;
    RunSummary summary;
};

WatchedRun trainWatching(const RunConfig& config)
{
    auto backend = makeCpuBackend(config.training.threads);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    Trainer trainer(config, *backend, data);
    WatchedRun run;
    run.initial = readBuffers(trainer, *backend);
    run.watch.trainer = &trainer;
    run.watch.backend = backend.get();
    trainer.addObserver(&run.watch);
    run.summary = trainer.run();
    return run;
}

// The small conv + batch norm + residual problem in mixed-fp16 (graphs and running ahead as asked).
RunConfig convConfig(AutoSwitch graphs, AutoSwitch runAhead)
{
    RunConfig config = test_support::smallConvConfig(PrecisionMode::MixedFp16);
    config.training.graphs = graphs;
    config.training.runAhead = runAhead;
    return config;
}

} // namespace

TEST(SkippedStep, LeavesTheBatchNormStatisticsAsTheStepBeforeLeftThem)
{
    for (const auto& [graphs, runAhead] : {std::pair{AutoSwitch::Off, AutoSwitch::Off},
                                           {AutoSwitch::On, AutoSwitch::Off},
                                           {AutoSwitch::Off, AutoSwitch::On}}) {
        RunConfig config = convConfig(graphs, runAhead);
        // Scaled gradients beyond fp16 on the first steps: skipped until the scale backs off.
        config.lossScale.type = LossScaleType::Dynamic;
        config.lossScale.initial = 1e9f;
        config.lossScale.maxScale = 1e9f;
        const WatchedRun run = trainWatching(config);
        const BufferWatch& w = run.watch;
        ASSERT_FALSE(run.initial.empty()) << "the model has batch-norm statistics";
        int skippedSteps = 0, movedSteps = 0;
        for (std::size_t s = 0; s < w.after.size(); ++s) {
            const Buffers& before = s == 0 ? run.initial : w.after[s - 1];
            if (w.skipped[s]) {
                ++skippedSteps;
                EXPECT_TRUE(bitEqual(before, w.after[s])) << "skipped step " << s + 1 << " moved the statistics";
            } else if (!bitEqual(before, w.after[s])) {
                ++movedSteps;
            }
        }
        EXPECT_GT(skippedSteps, 0) << "the scale must overflow at first";
        EXPECT_GT(movedSteps, 0) << "steps taken update the statistics";
        EXPECT_EQ(run.summary.status, RunStatus::Finished);
    }
}

TEST(SkippedStep, AnOverflowingForwardPassLeavesNoNaNInTheStatistics)
{
    RunConfig config = convConfig(AutoSwitch::Off, AutoSwitch::Off);
    // The first convolution's outputs reach ~1e6, far beyond fp16's 65504: the forward pass
    // overflows on every step, so every step is skipped and nothing may move.
    config.model.layers.front().init = "normal:20000";
    config.lossScale.type = LossScaleType::Dynamic;
    config.training.maxSteps = 6;
    const WatchedRun run = trainWatching(config);
    ASSERT_EQ(run.watch.after.size(), 6u);
    for (std::size_t s = 0; s < run.watch.after.size(); ++s)
        EXPECT_TRUE(run.watch.skipped[s]) << "step " << s + 1 << " should overflow in its forward pass";
    EXPECT_TRUE(bitEqual(run.initial, run.watch.after.back()));
    for (const auto& [name, values] : run.watch.after.back())
        for (float v : values)
            ASSERT_TRUE(std::isfinite(v)) << name;
}
