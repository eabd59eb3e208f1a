// Gradient clipping compares the threshold with the norm of the unscaled gradients: the
// trainer unscales first, then clips (docs/config.md, grad_clip_norm). With a power-of-two
// loss scale and a type whose exponent range is fp32's (mixed-bf16), scaling and unscaling are
// exact, so a run with scale 1024 must take the very same steps as a run with scale 1. Had the
// clip seen the scaled gradients, their norm would be 1024 times larger and every clipped
// step would shrink the gradients 1024 times more. The threshold is set to clip most steps,
// and a run without clipping is shown to differ, so the comparison cannot pass by accident.
#include "engine/backend/backend.h"
#include "engine/config/run_config.h"
#include "engine/data/dataset.h"
#include "engine/train/trainer.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace mantissa;

namespace {

// Written as the user-facing JSON, the stable way to say "static scale 1024, clip 0.05".
RunConfig clipConfig(const std::string& lossScale, float clipNorm)
{
    const std::string json = R"({
      "name": "clip-order",
      "model": {"input": [1, 8, 8], "classes": 4, "layers": [
        {"type": "flatten"}, {"type": "linear", "units": 32, "activation": "relu"}, {"type": "linear", "units": 4}]},
      "data": {"dataset": "synthetic", "synthetic_shape": [1, 8, 8], "synthetic_classes": 4,
               "synthetic_train": 512, "synthetic_test": 128},
      "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9, "grad_clip_norm": )" +
                             std::to_string(clipNorm) + R"(},
      "precision": {"mode": "mixed-bf16", "loss_scale": )" +
                             lossScale + R"(},
      "training": {"batch_size": 32, "epochs": 2, "seed": 7, "threads": 1}
    })";
    return parseRunConfig(json, "clip_order_test");
}

struct NormRecorder final : TrainingObserver {
    std::vector<float> norms, scales;
    void onStep(const StepRecord& r) override
    {
        norms.push_back(r.gradNorm);
        scales.push_back(r.lossScale);
    }
    void onEvent(const EventRecord&) override {}
};

struct ClipRun {
    RunSummary summary;
    NormRecorder steps;
    std::vector<std::uint32_t> weightBits; // every master weight, as bits
};

ClipRun train(const RunConfig& config)
{
    auto backend = makeCpuBackend(1);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    Trainer trainer(config, *backend, data);
    ClipRun run;
    trainer.addObserver(&run.steps);
    run.summary = trainer.run();
    for (const Parameter* p : trainer.model().parametersInBackwardOrder())
        for (float v : p->master.toFloats())
            run.weightBits.push_back(std::bit_cast<std::uint32_t>(v));
    return run;
}

TEST(ClipOrder, ClippingSeesTheUnscaledNorm)
{
    constexpr float kClip = 0.05f;
    const ClipRun unscaled = train(clipConfig(R"({"type": "static", "value": 1})", kClip));
    const ClipRun scaled = train(clipConfig(R"({"type": "static", "value": 1024})", kClip));
    const ClipRun unclipped = train(clipConfig(R"({"type": "static", "value": 1024})", 0.0f));
    ASSERT_EQ(unscaled.summary.status, RunStatus::Finished);
    ASSERT_EQ(scaled.summary.status, RunStatus::Finished);
    ASSERT_EQ(scaled.summary.skippedSteps, 0);
    ASSERT_EQ(scaled.steps.scales.front(), 1024.0f);

    // The clip is active: most steps' unscaled norm is above the threshold (measured: all 32
    // steps, the smallest norm 1.86), and without it the weights end elsewhere.
    int clipped = 0;
    for (float norm : scaled.steps.norms)
        clipped += norm > kClip ? 1 : 0;
    EXPECT_GT(clipped, static_cast<int>(scaled.steps.norms.size()) / 2);
    EXPECT_NE(unclipped.weightBits, scaled.weightBits);

    // The recorded norm is the unscaled one, and the steps taken are the same bit for bit.
    EXPECT_EQ(scaled.steps.norms, unscaled.steps.norms);
    EXPECT_EQ(scaled.weightBits, unscaled.weightBits);
    EXPECT_EQ(std::bit_cast<std::uint32_t>(scaled.summary.trainLoss),
              std::bit_cast<std::uint32_t>(unscaled.summary.trainLoss));
}

} // namespace
