// Run config JSON: strict parsing with errors that name the field, round trips, presets.
#include "engine/config/presets.h"
#include "engine/config/run_config.h"
#include "engine/model/model_validation.h"
#include "engine/util/check.h"

#include <gtest/gtest.h>

using namespace mantissa;

namespace {

std::string errorOf(const std::string& json)
{
    try {
        parseRunConfig(json, "test.json");
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}

const char* kMinimal = R"({"model": {"input": [4], "classes": 2, "layers": [{"type": "linear", "units": 2}]}})";

} // namespace

TEST(Config, MinimalConfigGetsDefaults)
{
    const RunConfig c = parseRunConfig(kMinimal, "test.json");
    EXPECT_EQ(c.precision, PrecisionMode::Fp32);
    EXPECT_EQ(c.training.batchSize, 128);
    EXPECT_EQ(c.optimizer.type, OptimizerKind::Sgd);
    EXPECT_EQ(c.lossScale.type, LossScaleType::Auto);
    ASSERT_EQ(c.model.layers.size(), 1u);
    EXPECT_EQ(c.model.layers[0].units, 2);
}

TEST(Config, ErrorsNameTheFileAndTheField)
{
    EXPECT_NE(errorOf("{").find("test.json: not valid JSON"), std::string::npos);
    EXPECT_NE(errorOf("{}").find("model is missing"), std::string::npos);
    const std::string misspelt = errorOf(R"({"model": {"layers": []}, "optimizer": {"momentun": 0.9}})");
    EXPECT_NE(misspelt.find("optimizer.momentun is not a known field"), std::string::npos) << misspelt;
    const std::string wrongType = errorOf(R"({"model": {"layers": []}, "training": {"batch_size": "big"}})");
    EXPECT_NE(wrongType.find("training.batch_size has the wrong type"), std::string::npos) << wrongType;
    const std::string badMode = errorOf(R"({"model": {"layers": []}, "precision": {"mode": "fp8"}})");
    EXPECT_NE(badMode.find("precision.mode is \"fp8\""), std::string::npos) << badMode;
    const std::string badLayer = errorOf(R"({"model": {"layers": [{"type": "linear", "unit": 3}]}})");
    EXPECT_NE(badLayer.find("model.layers[0].unit is not a known field"), std::string::npos) << badLayer;
    const std::string noType = errorOf(R"({"model": {"layers": [{"units": 3}]}})");
    EXPECT_NE(noType.find("model.layers[0] has no \"type\""), std::string::npos) << noType;
    const std::string badBatch = errorOf(R"({"model": {"layers": []}, "training": {"batch_size": 0}})");
    EXPECT_NE(badBatch.find("training.batch_size must be positive"), std::string::npos) << badBatch;
    const std::string badWorkspace = errorOf(R"({"model": {"layers": []}, "training": {"cudnn_workspace_mib": -5}})");
    EXPECT_NE(badWorkspace.find("training.cudnn_workspace_mib must be 0 to 65536 (got -5)"), std::string::npos)
        << badWorkspace;
    const std::string badGraphs = errorOf(R"({"model": {"layers": []}, "training": {"graphs": "always"}})");
    EXPECT_NE(badGraphs.find("training.graphs is \"always\"; expected auto, on or off"), std::string::npos)
        << badGraphs;
}

TEST(Config, GpuSettingsDefaultToTrueFp32AndRoundTrip)
{
    EXPECT_FALSE(parseRunConfig(kMinimal, "test.json").training.tf32);
    EXPECT_EQ(parseRunConfig(kMinimal, "test.json").training.cudnnWorkspaceMiB, 256);
    EXPECT_EQ(parseRunConfig(kMinimal, "test.json").training.graphs, AutoSwitch::Auto);
    RunConfig c = parseRunConfig(kMinimal, "test.json");
    c.training.tf32 = true;
    c.training.cudnnWorkspaceMiB = 1024;
    c.training.graphs = AutoSwitch::Off;
    const RunConfig again = parseRunConfig(runConfigToJson(c), "again.json");
    EXPECT_TRUE(again.training.tf32);
    EXPECT_EQ(again.training.cudnnWorkspaceMiB, 1024);
    EXPECT_EQ(again.training.graphs, AutoSwitch::Off);
}

TEST(Config, SerialisationRoundTrips)
{
    for (const std::string& name : presetNames()) {
        const RunConfig original = presetConfig(name);
        const std::string json = runConfigToJson(original);
        const RunConfig again = parseRunConfig(json, name);
        EXPECT_EQ(runConfigToJson(again), json) << name;
    }
}

TEST(Config, EveryPresetIsValid)
{
    const auto names = presetNames();
    for (const char* expected : {"softmax", "mlp", "cnn", "wide-mlp", "deep-mlp", "vgg-small", "resnet-small"})
        EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
    for (const std::string& name : names) {
        const ModelReport report = validateModel(presetConfig(name).model);
        EXPECT_TRUE(report.valid()) << name << ": " << report.error;
        EXPECT_GT(report.totalParameters, 0) << name;
    }
}

TEST(Config, ReferenceWorkloadsHaveTheirDocumentedSizes)
{
    // W1: 784*1024 + 1024 + 1024*1024 + 1024 + 1024*10 + 10 parameters.
    EXPECT_EQ(validateModel(presetConfig("mlp").model).totalParameters, 1863690);
    // W2: conv 1->32 (288) + BN (64) + conv 32->64 (18432) + BN (128) + FC 3136->256 + FC 256->10.
    EXPECT_EQ(validateModel(presetConfig("cnn").model).totalParameters, 288 + 64 + 18432 + 128 + 803072 + 2570);
}

TEST(Config, UnknownPresetListsTheKnownOnes)
{
    try {
        presetConfig("mpl");
        FAIL();
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("unknown preset \"mpl\""), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("mlp"), std::string::npos);
    }
}

TEST(ModelValidation, LinearInputsMismatchNamesLayerAndSuggestsCause)
{
    RunConfig c = presetConfig("cnn");
    c.model.layers[4].filters = 32; // the second conv now has 32 filters: 32*7*7 = 1568 features
    const ModelReport report = validateModel(c.model);
    ASSERT_FALSE(report.valid());
    EXPECT_EQ(report.errorLayer, 9);
    EXPECT_NE(report.error.find("layer 9 (linear): expects 3136 inputs, receives 1568"), std::string::npos) << report.error;
    EXPECT_NE(report.error.find("did the pooling change?"), std::string::npos) << report.error;
}

TEST(ModelValidation, FinalWidthMustMatchClasses)
{
    RunConfig c = parseRunConfig(kMinimal, "t");
    c.model.classes = 3;
    const ModelReport report = validateModel(c.model);
    EXPECT_EQ(report.errorLayer, 0);
    EXPECT_NE(report.error.find("3 classes"), std::string::npos) << report.error;
}

TEST(ModelValidation, LinearOnImageAsksForFlatten)
{
    RunConfig c = parseRunConfig(kMinimal, "t");
    c.model.input = {1, 28, 28};
    const ModelReport report = validateModel(c.model);
    EXPECT_NE(report.error.find("layer 0 (linear): expects a flat vector"), std::string::npos) << report.error;
    EXPECT_NE(report.error.find("add a flatten layer"), std::string::npos);
}
