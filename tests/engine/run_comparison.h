#pragma once
// Two trainings of one config compared record by record: the step-graph and run-ahead tests
// hold a run with those mechanisms on to the same run with them off.
#include "engine/backend/backend.h"
#include "engine/train/trainer.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

namespace mantissa::test_support {

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
    std::int64_t graphSteps = 0, eagerSteps = 0, requeuedSteps = 0;
};

// Trains on the CPU with training.graphs and training.run_ahead set as given.
inline TrainedRun train(RunConfig config, bool graphs, bool runAhead = false)
{
    config.training.graphs = graphs ? AutoSwitch::On : AutoSwitch::Off;
    config.training.runAhead = runAhead ? AutoSwitch::On : AutoSwitch::Off;
    auto backend = makeCpuBackend(config.training.threads);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    Trainer trainer(config, *backend, data);
    TrainedRun run;
    trainer.addObserver(&run.recorder);
    run.summary = trainer.run();
    run.graphStatus = trainer.graphStatus();
    run.graphSteps = trainer.graphSteps();
    run.eagerSteps = trainer.eagerSteps();
    run.requeuedSteps = trainer.requeuedSteps();
    return run;
}

inline std::uint32_t bits(float v) { return std::bit_cast<std::uint32_t>(v); }

// Every step record, event and the summary's results equal to the bit.
inline void expectIdentical(const TrainedRun& tested, const TrainedRun& reference)
{
    ASSERT_EQ(tested.recorder.steps.size(), reference.recorder.steps.size());
    for (std::size_t i = 0; i < tested.recorder.steps.size(); ++i) {
        const StepRecord& g = tested.recorder.steps[i];
        const StepRecord& e = reference.recorder.steps[i];
        SCOPED_TRACE("step " + std::to_string(e.step));
        ASSERT_EQ(bits(g.loss), bits(e.loss));
        ASSERT_EQ(bits(g.lossScale), bits(e.lossScale));
        ASSERT_EQ(bits(g.learningRate), bits(e.learningRate));
        ASSERT_EQ(g.skipped, e.skipped);
        ASSERT_EQ(bits(g.gradNorm), bits(e.gradNorm));
        ASSERT_EQ(bits(g.gradAmax), bits(e.gradAmax));
    }
    ASSERT_EQ(tested.recorder.events.size(), reference.recorder.events.size());
    for (std::size_t i = 0; i < tested.recorder.events.size(); ++i) {
        const EventRecord& g = tested.recorder.events[i];
        const EventRecord& e = reference.recorder.events[i];
        EXPECT_EQ(g.kind, e.kind);
        EXPECT_EQ(g.step, e.step);
        EXPECT_EQ(g.parameter, e.parameter);
        EXPECT_EQ(g.location.has_value(), e.location.has_value());
        if (g.location && e.location) {
            EXPECT_EQ(g.location->tensor, e.location->tensor);
            EXPECT_EQ(g.location->nonFiniteCount, e.location->nonFiniteCount);
            EXPECT_EQ(bits(g.location->largestFinite), bits(e.location->largestFinite));
        }
    }
    EXPECT_EQ(tested.summary.steps, reference.summary.steps);
    EXPECT_EQ(tested.summary.status, reference.summary.status);
    EXPECT_EQ(bits(tested.summary.testAccuracy), bits(reference.summary.testAccuracy));
    EXPECT_EQ(bits(tested.summary.testLoss), bits(reference.summary.testLoss));
    EXPECT_EQ(bits(tested.summary.finalLossScale), bits(reference.summary.finalLossScale));
}

} // namespace mantissa::test_support
