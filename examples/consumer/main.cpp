// Trains the softmax preset for a few steps on synthetic data through the installed engine,
// and prints the summary: proof that find_package(Mantissa) gives a working Mantissa::engine.
#include "engine/backend/backend.h"
#include "engine/config/presets.h"
#include "engine/train/trainer.h"

#include <cstdio>

int main()
{
    mantissa::RunConfig config = mantissa::presetConfig("softmax");
    config.precision = mantissa::PrecisionMode::MixedFp16;
    config.data.dataset = mantissa::DatasetKind::Synthetic;
    config.data.syntheticTrain = 1024;
    config.data.syntheticTest = 256;
    config.training.maxSteps = 20;
    auto backend = mantissa::makeCpuBackend(1);
    const mantissa::DatasetSplits data = mantissa::loadDatasets(config.data, config.training.seed);
    mantissa::Trainer trainer(config, *backend, data);
    const mantissa::RunSummary summary = trainer.run();
    std::printf("status %s, %lld steps, test accuracy %.3f\n", mantissa::runStatusName(summary.status),
                static_cast<long long>(summary.steps), summary.testAccuracy);
    return summary.status == mantissa::RunStatus::Finished ? 0 : 1;
}
