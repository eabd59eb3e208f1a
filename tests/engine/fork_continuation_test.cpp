// A run resumed from a saved training state (Trainer::resumeFrom) with nothing changed
// continues bit for bit as the run it was saved from: every step's loss and every epoch's
// record after the fork step, in fp32, in mixed fp16 with dynamic loss scaling (whose scale
// and counters must carry over) and under fp8-delayed (whose amax history must).
#include "engine/backend/backend.h"
#include "engine/model/gemm_coverage.h"
#include "engine/train/trainer.h"
#include "engine/util/check.h"
#include "small_run_config.h"

#include <gtest/gtest.h>

#include <bit>
#include <filesystem>
#include <map>

using namespace mantissa;

namespace {

std::uint32_t bits(float v) { return std::bit_cast<std::uint32_t>(v); }

// Records the run and saves a state file at every state point.
struct StateSaver final : TrainingObserver {
    Trainer* trainer = nullptr;
    std::filesystem::path directory;
    std::map<std::int64_t, std::string> states; // by step
    std::map<std::int64_t, StepRecord> steps;
    std::vector<EpochRecord> epochs;
    std::vector<EventRecord> scaleChanges;
    void onStep(const StepRecord& r) override { steps[r.step] = r; }
    void onEpoch(const EpochRecord& r) override { epochs.push_back(r); }
    void onEvent(const EventRecord& e) override
    {
        if (e.kind == EventKind::ScaleChange || e.kind == EventKind::Overflow)
            scaleChanges.push_back(e);
    }
    void onStatePoint(std::int64_t step) override
    {
        if (!trainer)
            return; // records only
        const std::string path = (directory / ("step-" + std::to_string(step) + ".ckpt")).string();
        trainer->saveCheckpoint(path);
        states[step] = path;
    }
};

class ForkContinuation : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_directory = std::filesystem::temp_directory_path() /
                      ("mantissa-fork-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::create_directories(m_directory);
    }
    void TearDown() override { std::filesystem::remove_all(m_directory); }

    // A parent run of `config` to its end, its states saved every training.save_state_every steps.
    StateSaver trainSavingStates(const RunConfig& config, Backend& backend, const DatasetSplits& data)
    {
        StateSaver parent;
        parent.directory = m_directory;
        Trainer original(config, backend, data);
        parent.trainer = &original;
        original.addObserver(&parent);
        original.run();
        parent.trainer = nullptr;
        return parent;
    }

    // Trains `config` saving its state every `every` steps, then resumes a second trainer from
    // each saved state in turn and compares everything after the fork step with the parent.
    void expectBitExactForks(RunConfig config, std::int64_t every, const std::string& what)
    {
        config.training.saveStateEvery = every;
        auto backend = makeCpuBackend(1);
        const DatasetSplits data = loadDatasets(config.data, config.training.seed);
        StateSaver parent;
        parent.directory = m_directory;
        Trainer original(config, *backend, data);
        parent.trainer = &original;
        original.addObserver(&parent);
        const RunSummary parentSummary = original.run();
        ASSERT_EQ(parentSummary.status, RunStatus::Finished) << what << ": " << parentSummary.message;
        // Mid-epoch and at an epoch's end (16 steps an epoch): both kinds of position.
        ASSERT_GE(parent.states.size(), 3u) << what;
        for (const auto& [forkStep, path] : parent.states) {
            Trainer fork(config, *backend, data);
            StateSaver child;
            child.directory = m_directory / "child";
            std::filesystem::create_directories(child.directory);
            child.trainer = &fork;
            fork.addObserver(&child);
            const std::string carried = fork.resumeFrom(path);
            EXPECT_NE(carried.find("resuming after step " + std::to_string(forkStep)), std::string::npos) << carried;
            const RunSummary summary = fork.run();
            ASSERT_EQ(summary.status, RunStatus::Finished) << what << " fork at " << forkStep;
            EXPECT_EQ(summary.steps, parentSummary.steps);
            ASSERT_EQ(child.steps.size(), static_cast<std::size_t>(parentSummary.steps - forkStep))
                << what << " fork at " << forkStep;
            EXPECT_EQ(child.steps.begin()->first, forkStep + 1);
            for (const auto& [step, record] : child.steps) {
                const StepRecord& before = parent.steps.at(step);
                ASSERT_EQ(bits(record.loss), bits(before.loss)) << what << " fork at " << forkStep << ", step " << step;
                ASSERT_EQ(bits(record.lossScale), bits(before.lossScale)) << what << " step " << step;
                ASSERT_EQ(bits(record.learningRate), bits(before.learningRate)) << what << " step " << step;
                ASSERT_EQ(record.skipped, before.skipped) << what << " step " << step;
                ASSERT_EQ(record.epoch, before.epoch) << what << " step " << step;
            }
            // The epochs the fork finished, its first one partly before the fork included.
            ASSERT_FALSE(child.epochs.empty()) << what << " fork at " << forkStep;
            for (const EpochRecord& e : child.epochs) {
                const EpochRecord& before = parent.epochs.at(static_cast<std::size_t>(e.epoch - 1));
                EXPECT_EQ(bits(e.trainLoss), bits(before.trainLoss)) << what << " epoch " << e.epoch;
                EXPECT_EQ(bits(e.trainAccuracy), bits(before.trainAccuracy)) << what << " epoch " << e.epoch;
                EXPECT_EQ(bits(e.testLoss), bits(before.testLoss)) << what << " epoch " << e.epoch;
            }
            EXPECT_EQ(bits(summary.finalLossScale), bits(parentSummary.finalLossScale)) << what;
            // The fork saved its own states at the same steps as the parent after the fork step.
            for (const auto& [step, childPath] : child.states)
                EXPECT_TRUE(parent.states.contains(step)) << step;
            std::filesystem::remove_all(child.directory);
        }
        m_lastParent = std::move(parent);
    }

    std::filesystem::path m_directory;
    StateSaver m_lastParent;
};

} // namespace

TEST_F(ForkContinuation, Fp32ContinuesBitForBit)
{
    RunConfig config = test_support::smallSyntheticConfig(PrecisionMode::Fp32);
    config.optimizer.type = OptimizerKind::Adam; // moments and the step count both matter
    config.optimizer.lr = 0.003f;
    expectBitExactForks(config, 7, "fp32");
}

TEST_F(ForkContinuation, MixedFp16ContinuesBitForBitWithTheScalersState)
{
    RunConfig config = test_support::smallSyntheticConfig(PrecisionMode::MixedFp16);
    config.lossScale.type = LossScaleType::Dynamic;
    // Starts at the top of the range so that the first steps overflow and back off, then grows
    // every 5 good steps: at every fork step the scale and its good-step counter are in play.
    config.lossScale.initial = 16777216.0f;
    config.lossScale.growthInterval = 5;
    config.lossScale.hysteresis = 2;
    expectBitExactForks(config, 6, "mixed-fp16");
    int changes = 0, overflows = 0;
    for (const EventRecord& e : m_lastParent.scaleChanges)
        (e.kind == EventKind::Overflow ? overflows : changes) += 1;
    EXPECT_GT(overflows, 0) << "the test needs skipped steps";
    EXPECT_GT(changes, 2) << "the test needs the scale to move";

    // The comparison can fail: resumed with the scaler as a fresh run has it, the fork's scales differ.
    config.training.saveStateEvery = 6;
    auto backend = makeCpuBackend(1);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    Trainer fork(config, *backend, data);
    StateSaver child;
    fork.addObserver(&child);
    fork.resumeFrom(m_lastParent.states.at(12));
    fork.restoreScalerState({config.lossScale.initial, 0, config.lossScale.hysteresis});
    fork.run();
    EXPECT_NE(bits(child.steps.at(13).lossScale), bits(m_lastParent.steps.at(13).lossScale));
}

TEST_F(ForkContinuation, Fp8DelayedContinuesBitForBitWithItsAmaxHistory)
{
    RunConfig config = test_support::smallSyntheticConfig(PrecisionMode::Fp8Delayed);
    config.recipe.keepFirstLast = RecipeSwitch::Off; // every GEMM quantised, each with its history
    config.recipe.amaxHistory = 4;                   // a history shorter than the run: it rolls over
    expectBitExactForks(config, 5, "fp8-delayed");
}

TEST_F(ForkContinuation, WithoutTheAmaxHistoryTheFp8DelayedForkWouldDiffer)
{
    // The comparison above can fail: a fork that started its delayed-scaling history afresh
    // scales its first steps by 1 and its losses differ from the parent's.
    RunConfig config = test_support::smallSyntheticConfig(PrecisionMode::Fp8Delayed);
    config.recipe.keepFirstLast = RecipeSwitch::Off;
    config.training.saveStateEvery = 8;
    auto backend = makeCpuBackend(1);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    const StateSaver parent = trainSavingStates(config, *backend, data);
    ASSERT_TRUE(parent.states.contains(8));
    // Another precision's fork is told the history starts fresh; the same precision's is not.
    RunConfig bf16 = config;
    bf16.precision = PrecisionMode::MixedBf16;
    Trainer switched(bf16, *backend, data);
    EXPECT_NE(switched.resumeFrom(parent.states.at(8)).find("scaling history starts fresh"), std::string::npos);
    Trainer same(config, *backend, data);
    const std::string carried = same.resumeFrom(parent.states.at(8));
    EXPECT_NE(carried.find("delayed-scaling history of"), std::string::npos) << carried;
    StateSaver child;
    same.addObserver(&child);
    same.run();
    StateSaver fresh; // the same weights and position, the history dropped: resumed by a fresh-history trainer
    Trainer noHistory(config, *backend, data);
    noHistory.addObserver(&fresh);
    noHistory.resumeFrom(parent.states.at(8));
    for (const GemmSite& site : gemmSites(noHistory.model().graph()))
        site.layer->gemmInputs().restoreAmaxHistories({});
    noHistory.run();
    EXPECT_EQ(bits(child.steps.at(9).loss), bits(parent.steps.at(9).loss));
    EXPECT_NE(bits(fresh.steps.at(9).loss), bits(parent.steps.at(9).loss));
}

TEST_F(ForkContinuation, ChangedSettingsApplyFromTheForkStep)
{
    RunConfig config = test_support::smallSyntheticConfig(PrecisionMode::Fp32);
    config.training.saveStateEvery = 10;
    auto backend = makeCpuBackend(1);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    const StateSaver parent = trainSavingStates(config, *backend, data);
    RunConfig faster = config;
    faster.optimizer.lr = 0.2f;
    Trainer fork(faster, *backend, data);
    StateSaver child;
    fork.addObserver(&child);
    fork.resumeFrom(parent.states.at(10));
    fork.run();
    EXPECT_EQ(child.steps.begin()->first, 11);
    EXPECT_EQ(child.steps.at(11).learningRate, 0.2f);
    // Step 11's batch and weights are the parent's: its loss is computed before the new rate acts.
    EXPECT_EQ(bits(child.steps.at(11).loss), bits(parent.steps.at(11).loss));
    EXPECT_NE(bits(child.steps.at(12).loss), bits(parent.steps.at(12).loss));
}

TEST_F(ForkContinuation, AModelOfOtherShapesIsRefusedNamingTheTensor)
{
    RunConfig config = test_support::smallSyntheticConfig(PrecisionMode::Fp32);
    config.training.saveStateEvery = 10;
    auto backend = makeCpuBackend(1);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    const StateSaver parent = trainSavingStates(config, *backend, data);
    RunConfig wider = config;
    wider.model.layers[1].units = 48;
    Trainer fork(wider, *backend, data);
    try {
        fork.resumeFrom(parent.states.at(10));
        FAIL() << "resumed a state of another model";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("the model's shape differs"), std::string::npos) << e.what();
        EXPECT_NE(
            std::string(e.what()).find("tensor 2.linear.weight has shape [32, 32] in the checkpoint but [32, 48]"),
            std::string::npos)
            << e.what();
    }
}

TEST_F(ForkContinuation, AStoppedRunsEndStateContinuesWhereItStopped)
{
    // Stopped mid-epoch, the checkpoint saved after run() resumes at the first step not taken.
    RunConfig config = test_support::smallSyntheticConfig(PrecisionMode::MixedFp16);
    auto backend = makeCpuBackend(1);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    StateSaver whole;
    {
        Trainer trainer(config, *backend, data);
        trainer.addObserver(&whole);
        trainer.run();
    }
    const std::string path = (m_directory / "stopped.ckpt").string();
    {
        Trainer stopped(config, *backend, data);
        struct StopAt final : TrainingObserver {
            Trainer* trainer = nullptr;
            void onStep(const StepRecord& r) override
            {
                if (r.step == 21)
                    trainer->requestStop();
            }
        } stopAt;
        stopAt.trainer = &stopped;
        stopped.addObserver(&stopAt);
        EXPECT_EQ(stopped.run().status, RunStatus::Stopped);
        EXPECT_EQ(stopped.position().step, 21);
        EXPECT_EQ(stopped.position().epoch, 2);
        EXPECT_EQ(stopped.position().batchIndex, 5);
        stopped.saveCheckpoint(path);
    }
    Trainer resumed(config, *backend, data);
    StateSaver rest;
    resumed.addObserver(&rest);
    resumed.resumeFrom(path);
    resumed.run();
    ASSERT_EQ(rest.steps.begin()->first, 22);
    for (const auto& [step, record] : rest.steps)
        ASSERT_EQ(bits(record.loss), bits(whole.steps.at(step).loss)) << "step " << step;
    ASSERT_EQ(rest.epochs.size(), 1u);
    EXPECT_EQ(bits(rest.epochs[0].trainLoss), bits(whole.epochs[1].trainLoss));
}
