// What pure fp16 does to the two underflow presets on Fashion-MNIST, held to what is
// deterministic (docs/underflow.md):
//  - deep-sigmoid (no batch norm) stays at chance in pure fp16 for every seed while mixed-fp16
//    trains: Adam's second moment underflows, the steps blow the weights up and every sigmoid
//    saturates.
//  - deep-mlp: the same blow-up happens for every seed, but batch norm makes the network blind
//    to the weights' scale, so what decides the run is whether the first layer's output, which
//    grows with its weights, ends up above fp16's 65504. Whether it does is chance (which seed
//    fails changes with any change to the arithmetic), so only the blow-up and the growth of
//    the output are tested, not which seeds diverge.
// Skipped without the dataset (scripts/setup installs dataset-fashion-mnist). About 10 s on
// one core: short runs, 2,000 test images.
#include "engine/backend/backend.h"
#include "engine/config/presets.h"
#include "engine/data/dataset.h"
#include "engine/model/layer.h"
#include "engine/train/trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

using namespace mantissa;

namespace {

const char* const kDataDir = "/usr/share/datasets/fashion-mnist";
constexpr std::int64_t kTestImages = 2000;

bool haveData() { return std::filesystem::exists(std::filesystem::path(kDataDir) / "train-images-idx3-ubyte.gz"); }

// One load for every run of a preset: the data (and its normalisation) do not depend on the
// seed; the seed only shuffles the order, which the Trainer does from the config.
const DatasetSplits& fashionMnist()
{
    static const DatasetSplits splits = [] {
        DataSpec spec;
        spec.directory = kDataDir;
        spec.limitTest = kTestImages;
        return loadDatasets(spec, 42);
    }();
    return splits;
}

RunConfig shortRun(const std::string& preset, PrecisionMode mode, std::uint64_t seed, std::int64_t steps)
{
    RunConfig config = presetConfig(preset);
    config.data.directory = kDataDir;
    config.data.limitTest = kTestImages;
    config.precision = mode;
    config.training.seed = seed;
    config.training.maxSteps = steps;
    config.training.threads = 1;
    return config;
}

float amaxOf(const Tensor& t)
{
    float amax = 0;
    for (float v : t.toFloats())
        amax = std::max(amax, std::abs(v));
    return amax;
}

// The first linear layer's weights as the forward pass uses them.
const Tensor& firstLinearWeights(Model& model)
{
    for (Layer* layer : model.layers())
        if (layer->kind() == LayerKind::Linear)
            return layer->parameters().front()->working;
    throw std::logic_error("the model has no linear layer");
}

// The largest |x W^T| of the first linear layer over the first 128 test images, in double: the
// value its 16-bit output would have to hold (batch norm only sees it afterwards).
double firstLinearOutputAmax(Model& model, const Dataset& test)
{
    const Tensor& w = firstLinearWeights(model);
    const std::vector<float> weights = w.toFloats();
    const std::int64_t out = w.shape()[0], in = w.shape()[1];
    double amax = 0;
    for (std::int64_t n = 0; n < 128; ++n) {
        const float* x = test.sample(n);
        for (std::int64_t o = 0; o < out; ++o) {
            double sum = 0;
            for (std::int64_t i = 0; i < in; ++i)
                sum += static_cast<double>(x[i]) * weights[static_cast<std::size_t>(o * in + i)];
            amax = std::max(amax, std::abs(sum));
        }
    }
    return amax;
}

struct Outcome {
    RunSummary summary;
    float firstWeightAmax = 0;
    double firstOutputAmax = 0;
};

Outcome train(const std::string& preset, PrecisionMode mode, std::uint64_t seed, std::int64_t steps)
{
    auto backend = makeCpuBackend(1);
    Trainer trainer(shortRun(preset, mode, seed, steps), *backend, fashionMnist());
    Outcome o;
    o.summary = trainer.run();
    o.firstWeightAmax = amaxOf(firstLinearWeights(trainer.model()));
    o.firstOutputAmax = firstLinearOutputAmax(trainer.model(), fashionMnist().test);
    return o;
}

TEST(PureFp16, DeepSigmoidStaysAtChanceForEverySeedWhileMixedFp16Trains)
{
    if (!haveData())
        GTEST_SKIP() << kDataDir << " is missing: scripts/setup installs the Debian package dataset-fashion-mnist";
    // 150 steps. Measured (seeds 0-7): pure fp16 9.4-18.4% test accuracy, train loss 2.18-2.42
    // (chance is ln 10 = 2.30); mixed-fp16 43-65%, train loss 1.62-1.81. The first layer's
    // weights start near 0.2; after the run (seeds 0-5) 20-512 in pure fp16, 0.27-0.30 mixed.
    for (std::uint64_t seed : {0, 1, 2, 3, 4, 5}) {
        const Outcome pure = train("deep-sigmoid", PrecisionMode::Fp16, seed, 150);
        const Outcome mixed = train("deep-sigmoid", PrecisionMode::MixedFp16, seed, 150);
        EXPECT_LT(pure.summary.testAccuracy, 0.25f) << "seed " << seed;
        EXPECT_GT(pure.summary.trainLoss, 2.1f) << "seed " << seed;
        EXPECT_GT(mixed.summary.testAccuracy, 0.4f) << "seed " << seed;
        EXPECT_LT(mixed.summary.trainLoss, 1.9f) << "seed " << seed;
        // The cause: the weights blown up by Adam's steps, not a skipped step.
        EXPECT_EQ(pure.summary.skippedSteps, 0) << "seed " << seed;
        EXPECT_GT(pure.firstWeightAmax, 10.0f) << "seed " << seed;
        EXPECT_LT(mixed.firstWeightAmax, 2.0f) << "seed " << seed;
    }
}

TEST(PureFp16, DeepMlpFirstLayerBlowsUpForEverySeed)
{
    if (!haveData())
        GTEST_SKIP() << kDataDir << " is missing: scripts/setup installs the Debian package dataset-fashion-mnist";
    // Measured (seeds 0-5): two Adam steps take the first layer's weights from about 0.2 to
    // 27-172; after 50 steps they are 250-428 and the first layer's output on 128 test images
    // would reach 2.5e4-8.1e4 (fp16 holds 65504). Mixed-fp16: weights 0.22-0.24, output 9-11.
    for (std::uint64_t seed : {0, 1, 2, 3, 4, 5}) {
        const Outcome early = train("deep-mlp", PrecisionMode::Fp16, seed, 2);
        EXPECT_GT(early.firstWeightAmax, 20.0f) << "seed " << seed;
        const Outcome pure = train("deep-mlp", PrecisionMode::Fp16, seed, 50);
        const Outcome mixed = train("deep-mlp", PrecisionMode::MixedFp16, seed, 50);
        EXPECT_GT(pure.firstOutputAmax, 1e4) << "seed " << seed;
        EXPECT_LT(mixed.firstWeightAmax, 2.0f) << "seed " << seed;
        EXPECT_LT(mixed.firstOutputAmax, 1e3) << "seed " << seed;
    }
}

} // namespace
