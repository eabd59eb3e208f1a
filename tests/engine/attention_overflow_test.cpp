// The fp16 attention overflow in training (issue 18, docs/transformers.md), on the config a
// user runs, docs/examples/attention-fp16-overflow.json, fed a small text for 8 steps: token
// embeddings of std 300 make the scores QK^T/sqrt(d) about 9e4.
//  - "softmax": "compute" in pure fp16: every step's scores hold inf, the softmax NaN, every
//    step is skipped and the located overflow names 2.attention.scores.
//  - the same in mixed-fp16: the dynamic loss scaler takes the forward overflow for a gradient
//    overflow and halves the scale at every step, to no avail.
//  - "softmax": "fp32" in pure fp16 and in mixed-fp16: the same scores stay finite in fp32 and
//    the runs train (no forward overflow; the loss falls).
// Deterministic for seeds 1, 2 and 3 (tested); a second or so on one core.
#include "engine/backend/backend.h"
#include "engine/data/dataset.h"
#include "engine/train/trainer.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace mantissa;

namespace {

constexpr std::int64_t kSteps = 8;

struct Recorder final : TrainingObserver {
    void onStep(const StepRecord& r) override { steps.push_back(r); }
    void onEvent(const EventRecord& e) override
    {
        if (e.kind == EventKind::Overflow)
            overflows.push_back(e);
    }
    std::vector<StepRecord> steps;
    std::vector<EventRecord> overflows;
};

std::filesystem::path textPath()
{
    return std::filesystem::temp_directory_path() /
           ("mantissa-attention-overflow-" + std::to_string(::getpid()) + ".txt");
}

// A few kilobytes of English-like text, written once and removed at exit.
std::string textFile()
{
    static const std::string path = [] {
        const auto file = textPath();
        std::atexit([] {
            std::error_code ignored;
            std::filesystem::remove(textPath(), ignored);
        });
        std::ofstream out(file);
        const char* const words[] = {"the ", "fox ", "jumps ", "over ", "a ", "lazy ", "dog; ", "then ", "runs.\n"};
        for (int i = 0; i < 2000; ++i)
            out << words[(i * 7 + i / 9) % 9];
        return file.string();
    }();
    return path;
}

RunConfig overflowConfig(InternalPrecision softmax, PrecisionMode mode, std::uint64_t seed)
{
    RunConfig config = loadRunConfigFile(MANTISSA_OVERFLOW_EXAMPLE);
    for (LayerSpec& layer : config.model.layers)
        if (layer.type == LayerKind::Attention)
            layer.softmax = softmax;
    config.data.directory = textFile();
    config.data.limitTrain = kSteps * config.training.batchSize;
    config.data.limitTest = 64;
    config.precision = mode;
    config.training.seed = seed;
    return config;
}

struct Outcome {
    RunSummary summary;
    Recorder record;
};

Outcome train(const RunConfig& config)
{
    auto backend = makeCpuBackend(1);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    Trainer trainer(config, *backend, data);
    Outcome outcome;
    trainer.addObserver(&outcome.record);
    outcome.summary = trainer.run();
    return outcome;
}

class AttentionOverflow : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(AttentionOverflow, Fp16SoftmaxOverflowsAtEveryStepAndTheLocationNamesTheScores)
{
    const Outcome run = train(overflowConfig(InternalPrecision::Compute, PrecisionMode::Fp16, GetParam()));
    EXPECT_EQ(run.summary.steps, kSteps);
    EXPECT_EQ(run.summary.skippedSteps, kSteps);
    ASSERT_EQ(run.record.overflows.size(), static_cast<std::size_t>(kSteps));
    for (const EventRecord& overflow : run.record.overflows) {
        ASSERT_TRUE(overflow.location.has_value());
        EXPECT_EQ(overflow.location->tensor, "2.attention.scores");
        EXPECT_GT(overflow.location->nonFiniteCount, 0);
    }
    for (const StepRecord& step : run.record.steps)
        EXPECT_FALSE(std::isfinite(step.loss)) << "step " << step.step;
}

TEST_P(AttentionOverflow, MixedFp16LossScaleCollapsesOnAForwardOverflow)
{
    const Outcome run = train(overflowConfig(InternalPrecision::Compute, PrecisionMode::MixedFp16, GetParam()));
    EXPECT_EQ(run.summary.skippedSteps, kSteps);
    ASSERT_EQ(run.record.overflows.size(), static_cast<std::size_t>(kSteps));
    for (const EventRecord& overflow : run.record.overflows) {
        EXPECT_EQ(overflow.scaleAfter, overflow.scaleBefore / 2) << "step " << overflow.step;
        ASSERT_TRUE(overflow.location.has_value());
        EXPECT_EQ(overflow.location->tensor, "2.attention.scores");
    }
    EXPECT_EQ(run.summary.finalLossScale, 65536.0f / 256.0f); // 2^16 halved at each of the 8 steps
}

TEST_P(AttentionOverflow, Fp32SoftmaxTrainsInPureAndMixedFp16)
{
    for (PrecisionMode mode : {PrecisionMode::Fp16, PrecisionMode::MixedFp16}) {
        const Outcome run = train(overflowConfig(InternalPrecision::Fp32, mode, GetParam()));
        SCOPED_TRACE(std::string(enumKey(mode)));
        EXPECT_EQ(run.summary.status, RunStatus::Finished);
        for (const EventRecord& overflow : run.record.overflows) {
            // Mixed fp16 may still skip a step while its scale settles, on a gradient.
            ASSERT_TRUE(overflow.location.has_value());
            EXPECT_NE(overflow.location->tensor, "2.attention.scores");
        }
        ASSERT_EQ(run.record.steps.size(), static_cast<std::size_t>(kSteps));
        float first = NAN, last = NAN;
        for (const StepRecord& step : run.record.steps)
            if (std::isfinite(step.loss))
                (std::isnan(first) ? first : last) = step.loss;
        ASSERT_TRUE(std::isfinite(first) && std::isfinite(last));
        EXPECT_LT(last, first);
        EXPECT_TRUE(std::isfinite(run.summary.testLoss));
    }
}

INSTANTIATE_TEST_SUITE_P(Seeds, AttentionOverflow, ::testing::Values(1u, 2u, 3u));

} // namespace
