#pragma once
// A quick, file-free GUI run for the UI tests: synthetic data with the model's own shape,
// one training thread so that a core is left to the UI thread.
#include "engine/config/run_config.h"

#include <cstdint>

namespace mantissa::ui::test {

inline RunConfig quickConfig(RunConfig c, std::int64_t maxSteps, std::int64_t trainSamples = 2048)
{
    c.data.dataset = DatasetKind::Synthetic;
    c.data.syntheticShape = c.model.input;
    c.data.syntheticClasses = c.model.classes;
    c.data.syntheticTrain = trainSamples;
    c.data.syntheticTest = 256;
    c.training.maxSteps = maxSteps;
    c.training.epochs = 1;
    c.training.batchSize = 64;
    c.training.threads = 1;
    return c;
}

} // namespace mantissa::ui::test
