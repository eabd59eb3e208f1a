// training.init_from: a Trainer that starts from a checkpoint's weights (fine-tuning an fp32
// model in mixed fp16), and the checkpoints it refuses, with the tensor and both shapes named
// and its own weights left as they were.
#include "engine/backend/backend.h"
#include "engine/train/trainer.h"
#include "engine/util/check.h"
#include "small_run_config.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

using namespace mantissa;

namespace {

// Every parameter's master weights, by name.
std::map<std::string, std::vector<float>> masterWeights(Trainer& trainer, Backend& backend)
{
    std::map<std::string, std::vector<float>> weights;
    for (Parameter* p : trainer.model().parametersInBackwardOrder()) {
        std::vector<float> values(static_cast<std::size_t>(p->master.numel()));
        backend.download(p->master, values.data());
        weights[p->name] = std::move(values);
    }
    return weights;
}

std::string refusal(const std::function<void()>& action)
{
    try {
        action();
    } catch (const IoError& e) {
        return e.what();
    }
    return "(nothing refused)";
}

class InitFrom : public ::testing::Test {
protected:
    void SetUp() override
    {
        // One file per test and process: CTest runs these tests in parallel processes.
        m_path = std::filesystem::temp_directory_path() /
                 ("mantissa-init-from-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
                  "-" + std::to_string(::getpid()) + ".ckpt");
        Trainer trained(m_fp32, *m_backend, m_data);
        trained.run();
        m_trainedLoss = trained.evaluate(m_data.test).loss;
        m_trained = masterWeights(trained, *m_backend);
        trained.saveCheckpoint(m_path.string());
    }
    void TearDown() override { std::filesystem::remove(m_path); }

    RunConfig m_fp32 = test_support::smallSyntheticConfig();
    std::unique_ptr<Backend> m_backend = makeCpuBackend(1);
    DatasetSplits m_data = loadDatasets(m_fp32.data, m_fp32.training.seed);
    std::filesystem::path m_path;
    float m_trainedLoss = 0;
    std::map<std::string, std::vector<float>> m_trained;
};

} // namespace

TEST_F(InitFrom, AMixedFp16TrainerStartsFromTheFp32Weights)
{
    RunConfig mixed = test_support::smallSyntheticConfig(PrecisionMode::MixedFp16);
    mixed.training.seed = 99; // other initial weights: the checkpoint must replace them
    mixed.training.initFrom = m_path.string();
    Trainer fineTune(mixed, *m_backend, m_data);
    EXPECT_EQ(masterWeights(fineTune, *m_backend), m_trained); // fp32 masters: bit for bit
    // The fp16 working copies follow the masters, so the evaluation is the fp32 model's within
    // fp16 rounding, and far from a fresh model's.
    EXPECT_NEAR(fineTune.evaluate(m_data.test).loss, m_trainedLoss, 0.02f * m_trainedLoss);
    mixed.training.initFrom.clear();
    Trainer fresh(mixed, *m_backend, m_data);
    EXPECT_GT(std::abs(fresh.evaluate(m_data.test).loss - m_trainedLoss), 0.1f * m_trainedLoss);
    // The optimizer starts fresh: the fine-tune runs its own steps from 1.
    const RunSummary summary = fineTune.run();
    EXPECT_EQ(summary.status, RunStatus::Finished);
    EXPECT_EQ(summary.steps, fineTune.totalSteps());
}

TEST_F(InitFrom, AModelOfOtherShapesIsRefusedNamingTheTensorAndBothShapes)
{
    RunConfig wider = m_fp32;
    wider.model.layers[2].units = 48; // the second hidden layer: 32 -> 48
    wider.training.initFrom = m_path.string();
    const std::string message = refusal([&] { Trainer trainer(wider, *m_backend, m_data); });
    EXPECT_NE(message.find("training.init_from: " + m_path.string()), std::string::npos) << message;
    // Checked in backward order: the output layer, whose input is the widened layer, comes first.
    EXPECT_NE(message.find("tensor 3.linear.weight has shape [4, 32] in the checkpoint but [4, 48] in this model"),
              std::string::npos)
        << message;
}

TEST_F(InitFrom, ARefusedCheckpointLeavesTheWeightsAsTheyWere)
{
    // A deeper model: every tensor of the checkpoint's first layers fits, but the checkpoint
    // lacks the extra layer's, and the last layer's input width differs.
    RunConfig deeper = m_fp32;
    deeper.model.layers.insert(deeper.model.layers.end() - 1,
                               test_support::layerSpec(LayerKind::Linear, 16, Activation::Relu));
    Trainer trainer(deeper, *m_backend, m_data);
    const auto before = masterWeights(trainer, *m_backend);
    const std::string message = refusal([&] { trainer.loadCheckpoint(m_path.string(), true); });
    EXPECT_NE(message.find("in the checkpoint but"), std::string::npos) << message;
    EXPECT_EQ(masterWeights(trainer, *m_backend), before); // shapes are checked before any upload

    // A shallower model lacks tensors the checkpoint has.
    RunConfig shallower = m_fp32;
    shallower.model.layers.erase(shallower.model.layers.begin() + 2);
    shallower.model.layers[1].units = 32;
    Trainer small(shallower, *m_backend, m_data);
    const std::string lacks = refusal([&] { small.loadCheckpoint(m_path.string(), true); });
    EXPECT_NE(lacks.find("which this model lacks"), std::string::npos) << lacks;
}

TEST(InitFromConfig, TheFieldsReadWriteAndRefuseNegativeIntervals)
{
    const char* json = R"({"model": {"input": [4], "classes": 2, "layers": [{"type": "linear", "units": 2}]},
        "training": {"init_from": "/data/fp32.ckpt", "checkpoint_every_epochs": 5}})";
    const RunConfig c = parseRunConfig(json, "test.json");
    EXPECT_EQ(c.training.initFrom, "/data/fp32.ckpt");
    EXPECT_EQ(c.training.checkpointEveryEpochs, 5);
    const RunConfig again = parseRunConfig(runConfigToJson(c), "again.json");
    EXPECT_EQ(again.training.initFrom, c.training.initFrom);
    EXPECT_EQ(again.training.checkpointEveryEpochs, 5);
    const RunConfig defaults =
        parseRunConfig(R"({"model": {"input": [4], "classes": 2, "layers": [{"type": "linear", "units": 2}]}})", "d");
    EXPECT_TRUE(defaults.training.initFrom.empty());
    EXPECT_EQ(defaults.training.checkpointEveryEpochs, 0);
    try {
        parseRunConfig(R"({"model": {"input": [4], "classes": 2, "layers": [{"type": "linear", "units": 2}]},
            "training": {"checkpoint_every_epochs": -1}})",
                       "neg.json");
        FAIL() << "a negative interval was accepted";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("neg.json: training.checkpoint_every_epochs must be 0"), std::string::npos)
            << e.what();
    }
}
