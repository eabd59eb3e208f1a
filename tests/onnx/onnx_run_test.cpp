// An imported model trains as a run: the MLP fixture named by model.onnx goes through the
// Trainer as a preset's layer list does (one Model, one graph, one loop), in fp32, mixed-bf16 and
// MXFP8; its recipe coverage and its numerics lens name the ONNX nodes; a checkpoint of it reloads; and a config whose
// shapes do not agree with the file or the data is refused with both shapes named.
#include "engine/onnx/onnx_model.h"
#include "engine/train/trainer.h"
#include "engine/util/check.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

namespace mantissa {
namespace {

const std::string kMlp = std::string(MANTISSA_ONNX_MODELS) + "/torch/mlp.onnx";

// The MLP fixture (3x8x8 inputs, 10 classes) on synthetic data of its shape.
RunConfig mlpRun(PrecisionMode mode)
{
    RunConfig config;
    config.data.dataset = DatasetKind::Synthetic;
    config.data.syntheticTrain = 512;
    config.data.syntheticTest = 128;
    config.data.syntheticNoise = 0.5f;
    config.precision = mode;
    config.training.batchSize = 32;
    config.training.epochs = 2;
    config.training.threads = 1;
    onnx_import::useOnnxModel(config, kMlp);
    return config;
}

struct Steps final : TrainingObserver {
    std::vector<float> losses;
    std::vector<NumericsRecord> numerics;
    std::vector<ShadowRecord> shadows;
    void onStep(const StepRecord& r) override { losses.push_back(r.loss); }
    void onNumerics(const NumericsRecord& r) override { numerics.push_back(r); }
    void onShadow(const ShadowRecord& r) override { shadows.push_back(r); }
};

TEST(OnnxRun, ConfigTakesTheFilesShapes)
{
    const RunConfig config = mlpRun(PrecisionMode::Fp32);
    EXPECT_EQ(config.model.input, (std::vector<std::int64_t>{3, 8, 8}));
    EXPECT_EQ(config.model.classes, 10);
    EXPECT_TRUE(config.model.layers.empty());
    EXPECT_TRUE(std::filesystem::path(config.model.onnx).is_absolute());
    EXPECT_EQ(config.data.syntheticShape, config.model.input);
    // The field round-trips through the config's JSON.
    const RunConfig again = parseRunConfig(runConfigToJson(config), "test");
    EXPECT_EQ(again.model.onnx, config.model.onnx);
    // A config without it writes no model.onnx, as configs stored before it existed.
    EXPECT_EQ(runConfigToJson(RunConfig{}).find("onnx"), std::string::npos);
}

class OnnxRunTrains : public testing::TestWithParam<PrecisionMode> {};

TEST_P(OnnxRunTrains, ThroughTheTrainer)
{
    const RunConfig config = mlpRun(GetParam());
    auto backend = makeCpuBackend(1);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    Trainer trainer(config, *backend, data);
    // The file's initializers are the parameters, by their names, with the file's values.
    std::vector<std::string> names;
    for (Parameter* p : trainer.model().parametersInBackwardOrder())
        names.push_back(p->name);
    EXPECT_EQ(names, (std::vector<std::string>{"head.weight", "head.bias", "fc2.weight", "fc2.bias", "fc1.weight",
                                               "fc1.bias"}));
    Steps steps;
    trainer.addObserver(&steps);
    const RunSummary summary = trainer.run();
    ASSERT_EQ(summary.status, RunStatus::Finished) << summary.message;
    ASSERT_EQ(steps.losses.size(), 32u);
    std::cout << "  loss " << steps.losses.front() << " -> " << steps.losses.back() << ", test accuracy "
              << summary.testAccuracy << "\n";
    EXPECT_LT(steps.losses.back(), 0.5f * steps.losses.front());
    EXPECT_GT(summary.testAccuracy, 0.9f);
}

INSTANTIATE_TEST_SUITE_P(Modes, OnnxRunTrains,
                         testing::Values(PrecisionMode::Fp32, PrecisionMode::MixedBf16, PrecisionMode::Mxfp8),
                         [](const testing::TestParamInfo<PrecisionMode>& info) {
                             std::string name(enumKey(info.param));
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

TEST(OnnxRun, RecipeCoverageNamesTheNodes)
{
    RunConfig config = mlpRun(PrecisionMode::Mxfp8);
    GemmCoverage coverage = plannedGemmCoverage(config.model, config.precision, config.recipe);
    ASSERT_EQ(coverage.gemms.size(), 3u) << coverage.summary();
    EXPECT_EQ(coverage.quantisedLayers(), (std::vector<std::string>{"/fc1/Gemm", "/fc2/Gemm", "/head/Gemm"}));
    // A 4-bit recipe keeps the first and last GEMMs (keep_first_last: auto): only the middle one
    // is quantised.
    config.precision = PrecisionMode::Mxfp4;
    coverage = plannedGemmCoverage(config.model, config.precision, config.recipe);
    EXPECT_EQ(coverage.quantisedLayers(), (std::vector<std::string>{"/fc2/Gemm"}));
}

// The shadow error track compares every node of the imported graph by its ONNX name: exactly in
// fp32 (the copy replays the step), by bf16's rounding in mixed-bf16.
TEST(OnnxRun, ShadowTrackComparesEveryNodeByName)
{
    for (const PrecisionMode mode : {PrecisionMode::Fp32, PrecisionMode::MixedBf16}) {
        SCOPED_TRACE(precisionModeName(mode));
        RunConfig config = mlpRun(mode);
        config.training.maxSteps = 4;
        config.numerics.shadowEvery = 2;
        auto backend = makeCpuBackend(1);
        const DatasetSplits data = loadDatasets(config.data, config.training.seed);
        Trainer trainer(config, *backend, data);
        Steps steps;
        trainer.addObserver(&steps);
        ASSERT_EQ(trainer.run().status, RunStatus::Finished);
        ASSERT_EQ(steps.shadows.size(), 2u);
        std::set<std::string> outputs, weightGradients;
        for (const ShadowError& e : steps.shadows[1].errors) {
            (e.kind == ShadowTensor::WeightGrad ? weightGradients : outputs).insert(e.tensor);
            const double rel = e.energies.relativeRms();
            if (mode == PrecisionMode::Fp32) {
                EXPECT_EQ(rel, 0.0) << e.tensor;
            } else {
                EXPECT_GT(rel, 1e-4) << e.tensor; // bf16 keeps 8 significant bits: 2^-9 / sqrt(3) = 1.1e-3 a rounding
                EXPECT_LT(rel, 0.1) << e.tensor;
            }
        }
        EXPECT_TRUE(outputs.count("/fc1/Gemm") && outputs.count("/fc2/Gemm") && outputs.count("/head/Gemm"));
        EXPECT_EQ(weightGradients, (std::set<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias",
                                                          "head.weight", "head.bias"}));
    }
}

TEST(OnnxRun, NumericsLensNamesTheNodes)
{
    RunConfig config = mlpRun(PrecisionMode::MixedBf16);
    config.training.maxSteps = 2;
    config.numerics.every = 1;
    auto backend = makeCpuBackend(1);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    Trainer trainer(config, *backend, data);
    Steps steps;
    trainer.addObserver(&steps);
    ASSERT_EQ(trainer.run().status, RunStatus::Finished);
    ASSERT_EQ(steps.numerics.size(), 2u);
    std::set<std::string> tensors, layers;
    for (const TensorNumerics& t : steps.numerics.front().tensors) {
        tensors.insert(t.tensor);
        layers.insert(t.layer);
    }
    std::string names;
    for (const std::string& t : tensors)
        names += t + " ";
    EXPECT_TRUE(tensors.count("fc1.weight")) << names;
    EXPECT_TRUE(tensors.count("/fc1/Gemm.output")) << names;
    EXPECT_TRUE(layers.count("/fc1/Gemm"));
}

TEST(OnnxRun, CheckpointReloadsTheTrainedWeights)
{
    RunConfig config = mlpRun(PrecisionMode::Fp32);
    config.training.maxSteps = 5;
    auto backend = makeCpuBackend(1);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    const std::string path = testing::TempDir() + "onnx_run_checkpoint.bin";
    float trainedLoss = 0;
    {
        Trainer trainer(config, *backend, data);
        ASSERT_EQ(trainer.run().status, RunStatus::Finished);
        trainedLoss = trainer.evaluate(data.test).loss;
        trainer.saveCheckpoint(path);
    }
    Trainer fresh(config, *backend, data);
    const float initialLoss = fresh.evaluate(data.test).loss;
    ASSERT_NE(initialLoss, trainedLoss); // the file's weights, not the trained ones
    fresh.loadCheckpoint(path, true);
    EXPECT_EQ(fresh.evaluate(data.test).loss, trainedLoss);
    std::filesystem::remove(path);
}

TEST(OnnxRun, DataOfAnotherShapeIsRefusedNamingBoth)
{
    const RunConfig config = mlpRun(PrecisionMode::Fp32);
    RunConfig other = config;
    other.data.syntheticShape = {1, 28, 28};
    auto backend = makeCpuBackend(1);
    const DatasetSplits data = loadDatasets(other.data, config.training.seed);
    try {
        Trainer trainer(config, *backend, data);
        FAIL() << "a model of 3x8x8 samples trained on 1x28x28 ones";
    } catch (const ConfigError& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("[3, 8, 8]"), std::string::npos) << message;
        EXPECT_NE(message.find("[1, 28, 28]"), std::string::npos) << message;
    }
}

TEST(OnnxRun, ConfigThatDisagreesWithTheFileIsRefused)
{
    RunConfig config = mlpRun(PrecisionMode::Fp32);
    auto backend = makeCpuBackend(1);

    RunConfig wrongInput = config;
    wrongInput.model.input = {1, 28, 28};
    EXPECT_THROW(Model(wrongInput.model, PrecisionMode::Fp32, *backend, 1), ConfigError);

    RunConfig wrongClasses = config;
    wrongClasses.model.classes = 12;
    try {
        Model model(wrongClasses.model, PrecisionMode::Fp32, *backend, 1);
        FAIL() << "12 classes accepted for an output of 10";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("model.classes is 12"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("[10]"), std::string::npos) << e.what();
    }

    RunConfig both = config;
    both.model.layers.push_back(LayerSpec{});
    EXPECT_THROW(Model(both.model, PrecisionMode::Fp32, *backend, 1), ConfigError);
}

} // namespace
} // namespace mantissa
