#pragma once
// A short training run on the CPU with every step's loss kept, for the recipe tests that check
// that a precision mode learns and repeats bit for bit.
#include "engine/backend/backend.h"
#include "engine/data/dataset.h"
#include "engine/train/trainer.h"

#include <cstddef>
#include <vector>

namespace mantissa::test {

struct LossRecorder final : TrainingObserver {
    std::vector<float> losses;
    void onStep(const StepRecord& r) override { losses.push_back(r.loss); }
};

struct TrainedRun {
    RunSummary summary;
    std::vector<float> losses;
};

// Trains `config` on one thread and its own data.
inline TrainedRun trainRecordingLosses(const RunConfig& config)
{
    auto backend = makeCpuBackend(1);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    Trainer trainer(config, *backend, data);
    LossRecorder recorder;
    trainer.addObserver(&recorder);
    TrainedRun run;
    run.summary = trainer.run();
    run.losses = recorder.losses;
    return run;
}

// The mean of v[from, to).
inline double meanOf(const std::vector<float>& v, std::size_t from, std::size_t to)
{
    double s = 0;
    for (std::size_t i = from; i < to; ++i)
        s += v[i];
    return s / static_cast<double>(to - from);
}

} // namespace mantissa::test
