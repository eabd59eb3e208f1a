#pragma once
// Two trainings of one config compared record by record: the step-graph and run-ahead tests
// hold a run with those mechanisms on to the same run with them off, the kernel tests a run on
// native bf16 kernels to the emulated one.
#include "engine/backend/backend.h"
#include "engine/train/trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <tuple>
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

// How far the losses of a run on native bf16 kernels may stray from the emulated run's, as a
// fraction of the emulated run's first loss. The two paths sum the same exact bf16 products in
// fp32 in different orders (oneDNN's blocking, VDPBF16PS adding pairs), so their sums differ in
// the last bits; most results are rounded to bf16, which hides that until one rounding lands on
// the other side of a boundary, and from that step on the runs drift apart as two trainings
// with weights one bf16 unit apart do. Measured on an AMD EPYC (Zen 5, avx512_bf16, oneDNN
// avx512_core_bf16, 2 threads): 1.7e-4 over 48 steps of the 512-wide MLP below and 2.7e-4 over
// 64 steps of the convolutional network; 1e-3 is about four times the largest. The first loss
// is the scale: a drift's size follows the problem's losses, and the loss relative to itself
// is ill-conditioned once training drives it towards 0 (the 512-wide MLP's last losses, near
// 1e-6, differ by 18% of themselves and 6e-8 of its first loss). A kernel that computes
// something else misses from the first step by a fraction of the loss itself, which the first
// step's own bound (kNativeFirstStepDrift) catches before any drift could build up.
inline constexpr double kNativeLossDrift = 1e-3;
// The convolutional network's runs drift further where oneDNN's convolutions block their sums
// differently from the fp32 kernels': on an Intel Xeon with AMX (family 6 model 207, oneDNN
// avx512_core_amx, 2 threads) the runs are bit-identical for 9 steps, then drift to 1.3e-3
// within 32 steps, growing as two trainings one rounding apart do (2.7e-5 at step 10, 4.7e-4
// at 13, 1.1e-3 at 19). About four times that.
inline constexpr double kNativeConvLossDrift = 5e-3;
// The first step's loss: the same weights and data on both paths, so only the order of one
// forward pass's sums differs (0 measured on both machines: the first losses were bit-identical).
inline constexpr double kNativeFirstStepDrift = 1e-6;

struct NativeAgainstEmulated {
    std::size_t skippedSteps = 0;   // the same on both paths, or the comparison failed
    double largestLossDrift = 0;    // the largest |native - emulated| loss over the first loss
    std::size_t differingSteps = 0; // steps whose losses are not bit-identical
};

// Trains `config` on native and on emulated 16-bit kernels and holds the native run to the
// emulated one: the same steps skipped, the first step's loss within kNativeFirstStepDrift and
// each step's within `driftBound` of the emulated run's first loss, test accuracy within 5 points; the native run's kernel log must
// name `nativeKernel` ("bf16 matmul") and the emulated one's must not. Records the largest
// drift and how many steps differed at all.
inline NativeAgainstEmulated expectNativeRunFollowsEmulated(const RunConfig& config, const std::string& nativeKernel,
                                                            std::size_t minSteps, double driftBound = kNativeLossDrift)
{
    const auto trainWith = [&](CpuKernels kernels) {
        RunConfig c = config;
        c.training.cpuKernels = kernels;
        auto backend = makeCpuBackend(CpuOptions{2, kernels});
        const DatasetSplits data = loadDatasets(c.data, c.training.seed);
        Trainer trainer(c, *backend, data);
        Recorder recorder;
        trainer.addObserver(&recorder);
        const RunSummary summary = trainer.run();
        return std::tuple{summary, recorder.steps, backend->kernelPaths()};
    };
    const auto [nativeSummary, nativeSteps, nativePaths] = trainWith(CpuKernels::Native);
    const auto [emulatedSummary, emulatedSteps, emulatedPaths] = trainWith(CpuKernels::Emulated);
    NativeAgainstEmulated result;
    EXPECT_NE(nativePaths.find(nativeKernel), std::string::npos) << nativePaths;
    EXPECT_EQ(emulatedPaths.find(nativeKernel), std::string::npos) << emulatedPaths;
    EXPECT_EQ(nativeSteps.size(), emulatedSteps.size());
    EXPECT_GE(emulatedSteps.size(), minSteps);
    if (nativeSteps.size() != emulatedSteps.size() || emulatedSteps.empty())
        return result;
    const double scale = std::fabs(emulatedSteps.front().loss);
    for (std::size_t i = 0; i < nativeSteps.size(); ++i) {
        SCOPED_TRACE("step " + std::to_string(i + 1));
        EXPECT_EQ(nativeSteps[i].skipped, emulatedSteps[i].skipped);
        result.skippedSteps += emulatedSteps[i].skipped ? 1 : 0;
        const double drift = std::fabs(double(nativeSteps[i].loss) - emulatedSteps[i].loss) / scale;
        EXPECT_LE(drift, i == 0 ? kNativeFirstStepDrift : driftBound)
            << "native " << nativeSteps[i].loss << ", emulated " << emulatedSteps[i].loss;
        result.largestLossDrift = std::max(result.largestLossDrift, drift);
        result.differingSteps += bits(nativeSteps[i].loss) != bits(emulatedSteps[i].loss) ? 1 : 0;
    }
    std::ostringstream largest;
    largest << result.largestLossDrift;
    ::testing::Test::RecordProperty("largest_loss_drift", largest.str());
    ::testing::Test::RecordProperty("differing_steps", std::to_string(result.differingSteps));
    EXPECT_EQ(nativeSummary.skippedSteps, emulatedSummary.skippedSteps);
    EXPECT_NEAR(nativeSummary.testAccuracy, emulatedSummary.testAccuracy, 0.05);
    return result;
}

} // namespace mantissa::test_support
