// Training end to end under each precision.master_weights and optimizer_state: every mode
// trains and records, stochastic rounding repeats for a seed through the trainer, and a
// checkpoint carries Kahan's compensation (or starts it at zero when it has none).
#include "engine/backend/backend.h"
#include "engine/train/trainer.h"
#include "small_run_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

using namespace mantissa;

namespace {

struct Recorder final : TrainingObserver {
    std::vector<StepRecord> steps;
    void onStep(const StepRecord& r) override { steps.push_back(r); }
    void onEpoch(const EpochRecord&) override {}
    void onEvent(const EventRecord&) override {}
};

RunConfig config(MasterWeights masters, OptimizerStatePrecision state = OptimizerStatePrecision::Auto)
{
    RunConfig c = test_support::smallSyntheticConfig(PrecisionMode::MixedBf16);
    c.optimizer.momentum = 0.9f;
    c.update = {masters, state};
    return c;
}

// `graphSteps`: where given, how many steps replayed a captured graph.
std::vector<float> lossesOf(const RunConfig& c, std::int64_t* graphSteps = nullptr)
{
    auto backend = makeCpuBackend(1);
    const DatasetSplits data = loadDatasets(c.data, c.training.seed);
    Trainer trainer(c, *backend, data);
    Recorder recorder;
    trainer.addObserver(&recorder);
    trainer.run();
    if (graphSteps)
        *graphSteps = trainer.graphSteps();
    std::vector<float> out;
    for (const auto& s : recorder.steps)
        out.push_back(s.loss);
    return out;
}

const MasterWeights kAllMasters[] = {MasterWeights::Auto, MasterWeights::Fp32, MasterWeights::Bf16,
                                     MasterWeights::Bf16Stochastic, MasterWeights::Bf16Kahan};

} // namespace

TEST(MasterWeightsTraining, EveryModeTrainsAndRecords)
{
    for (MasterWeights masters : kAllMasters) {
        for (OptimizerStatePrecision state : {OptimizerStatePrecision::Auto, OptimizerStatePrecision::Bf16}) {
            const RunConfig c = config(masters, state);
            auto backend = makeCpuBackend(1);
            const DatasetSplits data = loadDatasets(c.data, c.training.seed);
            Trainer trainer(c, *backend, data);
            Recorder recorder;
            trainer.addObserver(&recorder);
            const RunSummary summary = trainer.run();
            const std::string label = std::string(enumKey(masters)) + " / state " + std::string(enumKey(state));
            std::cout << label << ": test accuracy " << summary.testAccuracy << ", loss " << recorder.steps.front().loss
                      << " -> " << recorder.steps.back().loss << "\n";
            EXPECT_EQ(summary.status, RunStatus::Finished) << label;
            EXPECT_EQ(recorder.steps.size(), 2u * (512 / 32)) << label;
            EXPECT_LT(recorder.steps.back().loss, recorder.steps.front().loss) << label;
            EXPECT_GT(summary.testAccuracy, 0.9f) << label;
            for (Parameter* p : trainer.model().parametersInBackwardOrder()) {
                const DType master =
                    masters == MasterWeights::Auto || masters == MasterWeights::Fp32 ? DType::F32 : DType::BF16;
                EXPECT_EQ(p->master.dtype(), master) << label << " " << p->name;
                EXPECT_EQ(p->state1.dtype(), state == OptimizerStatePrecision::Bf16 ? DType::BF16 : master) << label;
                EXPECT_EQ(p->compensation.defined(), masters == MasterWeights::Bf16Kahan) << label;
                // bf16 masters are the bf16 working copy themselves.
                EXPECT_EQ(p->working.sharesStorageWith(p->master), master == DType::BF16) << label;
            }
        }
    }
}

TEST(MasterWeightsTraining, StochasticRoundingRepeatsForASeedAndMovesWithIt)
{
    RunConfig c = config(MasterWeights::Bf16Stochastic);
    const auto a = lossesOf(c), b = lossesOf(c);
    EXPECT_EQ(a, b);
    // The same initial weights and batches (the rounding's seed is the run's): the curves part
    // only where the draws do, after the first update.
    EXPECT_NE(lossesOf(config(MasterWeights::Bf16)), a);
}

TEST(MasterWeightsTraining, ACapturedStepDrawsTheStepsOwnBits)
{
    // A captured step replays with the inputs of each new step: the draws follow the step
    // number there too, so the curve is the one the steps run op by op give.
    for (MasterWeights masters : {MasterWeights::Bf16Stochastic, MasterWeights::Bf16Kahan}) {
        RunConfig eager = config(masters);
        eager.training.graphs = AutoSwitch::Off;
        RunConfig captured = eager;
        captured.training.graphs = AutoSwitch::On;
        std::int64_t replayed = 0;
        EXPECT_EQ(lossesOf(captured, &replayed), lossesOf(eager)) << enumKey(masters);
        EXPECT_GT(replayed, 0) << enumKey(masters);
    }
}

TEST(MasterWeightsTraining, CheckpointCarriesTheCompensation)
{
    const auto path = std::filesystem::temp_directory_path() / "mantissa-kahan-test.ckpt";
    const RunConfig kahan = config(MasterWeights::Bf16Kahan);
    auto backend = makeCpuBackend(1);
    const DatasetSplits data = loadDatasets(kahan.data, kahan.training.seed);
    std::vector<std::vector<float>> saved;
    {
        Trainer trainer(kahan, *backend, data);
        trainer.run();
        trainer.saveCheckpoint(path.string());
        for (Parameter* p : trainer.model().parametersInBackwardOrder())
            saved.push_back(p->compensation.toFloats());
    }
    bool anyNonZero = false;
    for (const auto& c : saved)
        for (float v : c)
            anyNonZero = anyNonZero || v != 0.0f;
    EXPECT_TRUE(anyNonZero) << "training left no compensation to carry";

    Trainer resumed(kahan, *backend, data);
    resumed.loadCheckpoint(path.string(), false);
    const auto params = resumed.model().parametersInBackwardOrder();
    ASSERT_EQ(params.size(), saved.size());
    for (std::size_t i = 0; i < params.size(); ++i)
        EXPECT_EQ(params[i]->compensation.toFloats(), saved[i]) << params[i]->name;

    // A checkpoint saved under fp32 masters has no compensation: a Kahan run loads it with its
    // compensation at zero, and a run without one loads a Kahan checkpoint ignoring it.
    const auto fp32Path = std::filesystem::temp_directory_path() / "mantissa-fp32-masters-test.ckpt";
    {
        Trainer fp32(config(MasterWeights::Fp32), *backend, data);
        fp32.run();
        fp32.saveCheckpoint(fp32Path.string());
    }
    resumed.loadCheckpoint(fp32Path.string(), false);
    for (Parameter* p : resumed.model().parametersInBackwardOrder())
        EXPECT_EQ(p->compensation.toFloats(), std::vector<float>(static_cast<std::size_t>(p->master.numel()), 0.0f));
    Trainer nearest(config(MasterWeights::Bf16), *backend, data);
    EXPECT_NO_THROW(nearest.loadCheckpoint(path.string(), false));
    std::filesystem::remove(path);
    std::filesystem::remove(fp32Path);
}
