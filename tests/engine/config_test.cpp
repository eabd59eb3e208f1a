// Run config JSON: strict parsing with errors that name the field, round trips, presets.
#include "engine/config/config_docs.h"
#include "engine/config/presets.h"
#include "engine/config/run_config.h"
#include "engine/model/layers/activation_layer.h"
#include "engine/model/model_validation.h"
#include "engine/util/check.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

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
    EXPECT_NE(badBatch.find("training.batch_size must be 1 to 65536 samples (got 0)"), std::string::npos) << badBatch;
    const std::string badWorkspace = errorOf(R"({"model": {"layers": []}, "training": {"cudnn_workspace_mib": -5}})");
    EXPECT_NE(badWorkspace.find("training.cudnn_workspace_mib must be 0 to 65536 MiB (got -5)"), std::string::npos)
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

// A config as the build before the choice fields became enums wrote it (runConfigToJson with
// indent -1), with every such field set away from its default. Runs in existing databases
// carry their configs in this form, so it must read back to the same values and be written
// again byte for byte.
const char* kStoredBeforeEnums =
    R"({"data":{"dataset":"mnist","directory":"","limit_test":0,"limit_train":0,"normalize":true,)"
    R"("synthetic_classes":10,"synthetic_noise":1.0,"synthetic_shape":[1,28,28],"synthetic_test":1024,)"
    R"("synthetic_train":8192,"validation_split":0.0},"model":{"classes":10,"input":[1,28,28],"layers":[)"
    R"({"type":"flatten"},{"activation":"relu","precision":"fp32","type":"linear","units":64},)"
    R"({"precision":"bf16","type":"linear","units":32},{"precision":"fp16","type":"linear","units":10},)"
    R"({"layers":[{"precision":"fp32","type":"linear","units":10}],"shortcut":"identity","type":"residual"}]},)"
    R"("name":"every-enum","numerics":{"every":0,"scaled_gradients":false},"optimizer":{"beta1":0.8999999761581421,)"
    R"("beta2":0.9990000128746033,"epsilon":9.99999993922529e-09,"grad_clip_norm":0.0,"lr":0.05000000074505806,)"
    R"("momentum":0.8999999761581421,"nesterov":false,"type":"adamw","weight_decay":0.0},"precision":{"loss_scale":)"
    R"({"backoff_factor":0.5,"growth_factor":2.0,"growth_interval":2000,"hysteresis":1,"initial":65536.0,)"
    R"("max":16777216.0,"min":1.52587890625e-05,"type":"static","value":128.0},"mode":"mixed-bf16"},"schedule":)"
    R"({"gamma":0.10000000149011612,"max_lr":0.0,"milestones":[],"min_lr":0.0,"pct_start":0.30000001192092896,)"
    R"("type":"one-cycle","warmup_steps":0},"training":{"batch_size":128,"cudnn_workspace_mib":256,"device":"auto",)"
    R"("epochs":1,"eval_batch_size":1000,"graphs":"off","max_steps":0,"run_ahead":"on","seed":42,"tf32":false,)"
    R"("threads":0}})";

TEST(Config, StoredConfigsReadAndWriteByteForByte)
{
    const RunConfig c = parseRunConfig(kStoredBeforeEnums, "stored run");
    EXPECT_EQ(c.data.dataset, DatasetKind::Mnist);
    EXPECT_EQ(c.model.layers[1].precision, LayerPrecision::Fp32);
    EXPECT_EQ(c.model.layers[2].precision, LayerPrecision::Bf16);
    EXPECT_EQ(c.model.layers[3].precision, LayerPrecision::Fp16);
    EXPECT_EQ(c.model.layers[4].precision, LayerPrecision::Auto);
    EXPECT_EQ(c.model.layers[4].body[0].precision, LayerPrecision::Fp32);
    EXPECT_EQ(c.optimizer.type, OptimizerKind::AdamW);
    EXPECT_EQ(c.schedule.type, ScheduleKind::OneCycle);
    EXPECT_EQ(c.precision, PrecisionMode::MixedBf16);
    EXPECT_EQ(c.lossScale.type, LossScaleType::Static);
    EXPECT_EQ(c.training.graphs, AutoSwitch::Off);
    EXPECT_EQ(c.training.runAhead, AutoSwitch::On);
    // Every value a stored config holds is written back unchanged. Fields added since it was
    // stored (training.checkpoint_every_epochs and training.init_from, with the checkpoints;
    // training.cpu_kernels) are written with their defaults, which mean "as before": no epoch
    // checkpoints, fresh weights, and kernels chosen for the CPU that runs it.
    nlohmann::json expected = nlohmann::json::parse(kStoredBeforeEnums);
    expected["training"]["checkpoint_every_epochs"] = 0;
    expected["training"]["init_from"] = "";
    expected["training"]["cpu_kernels"] = "auto";
    EXPECT_EQ(runConfigToJson(c, -1), expected.dump());
}

// A recipe run's config keeps the recipe object it was stored with: the switches added since
// (precision.recipe.attention) are written only when set, so a stored recipe run reads back and
// is written again byte for byte, and a set one round-trips.
TEST(Config, StoredRecipeConfigsReadAndWriteByteForByte)
{
    RunConfig c = presetConfig("mlp");
    c.precision = PrecisionMode::Mxfp4;
    const std::string stored = runConfigToJson(c, -1);
    const nlohmann::json recipe = nlohmann::json::parse(stored)["precision"]["recipe"];
    std::vector<std::string> keys;
    for (auto it = recipe.begin(); it != recipe.end(); ++it)
        keys.push_back(it.key());
    EXPECT_EQ(keys,
              (std::vector<std::string>{"amax_history", "hadamard_wgrad", "keep_first_last", "power_of_two_scales",
                                        "scale_rule", "stochastic_rounding", "weight_blocks_2d"}));
    EXPECT_EQ(runConfigToJson(parseRunConfig(stored, "stored run"), -1), stored);

    c.recipe.attention = RecipeSwitch::On;
    const std::string withAttention = runConfigToJson(c, -1);
    EXPECT_EQ(nlohmann::json::parse(withAttention)["precision"]["recipe"]["attention"], "on");
    const RunConfig back = parseRunConfig(withAttention, "stored run");
    EXPECT_EQ(back.recipe.attention, RecipeSwitch::On);
    EXPECT_EQ(runConfigToJson(back, -1), withAttention);
}

// A model with a layer of every kind and both shortcuts, as the build before the layer types
// became enums (LayerKind) wrote it: it must read back to the same kinds and be written byte for
// byte, so that the runs stored since keep their configs.
const char* kStoredBeforeLayerKinds =
    R"({"data":{"dataset":"fashion-mnist","directory":"","limit_test":0,"limit_train":0,"normalize":true,)"
    R"("synthetic_classes":10,"synthetic_noise":1.0,"synthetic_shape":[1,28,28],"synthetic_test":1024,)"
    R"("synthetic_train":8192,"validation_split":0.0},"model":{"classes":4,"input":[3,8,8],)"
    R"("layers":[{"activation":"relu","bias":false,"filters":8,"init":"normal:0.02","kernel":3,"padding":1,)"
    R"("type":"conv2d"},{"epsilon":9.999999747378752e-06,"momentum":0.009999999776482582,)"
    R"("type":"batchnorm"},{"type":"gelu"},{"layers":[{"filters":8,"kernel":3,"padding":1,"type":"conv2d"},)"
    R"({"type":"tanh"}],"shortcut":"identity","type":"residual"},{"layers":[{"filters":16,"kernel":3,)"
    R"("padding":1,"stride":2,"type":"conv2d"}],"precision":"fp32","shortcut":"projection",)"
    R"("type":"residual"},{"kernel":2,"padding":0,"type":"maxpool"},{"kernel":3,"padding":1,"stride":1,)"
    R"("type":"avgpool"},{"type":"sigmoid"},{"type":"flatten"},{"rate":0.25,"type":"dropout"},)"
    R"({"activation":"tanh","inputs":64,"precision":"bf16","type":"linear","units":32},{"type":"relu"},)"
    R"({"type":"linear","units":4}]},"name":"every-layer-kind","numerics":{"every":0,)"
    R"("scaled_gradients":false},"optimizer":{"beta1":0.8999999761581421,"beta2":0.9990000128746033,)"
    R"("epsilon":9.99999993922529e-09,"grad_clip_norm":0.0,"lr":0.05000000074505806,)"
    R"("momentum":0.8999999761581421,"nesterov":false,"type":"sgd","weight_decay":0.0},)"
    R"("precision":{"loss_scale":{"backoff_factor":0.5,"growth_factor":2.0,"growth_interval":2000,)"
    R"("hysteresis":1,"initial":65536.0,"max":16777216.0,"min":1.52587890625e-05,"type":"auto",)"
    R"("value":128.0},"mode":"fp32"},"schedule":{"gamma":0.10000000149011612,"max_lr":0.0,"milestones":[],)"
    R"("min_lr":0.0,"pct_start":0.30000001192092896,"type":"constant","warmup_steps":0},)"
    R"("training":{"batch_size":128,"checkpoint_every_epochs":0,"cudnn_workspace_mib":256,"device":"auto",)"
    R"("epochs":1,"eval_batch_size":1000,"graphs":"auto","init_from":"","max_steps":0,"run_ahead":"auto",)"
    R"("seed":42,"tf32":false,"threads":0}})";

TEST(Config, StoredLayersOfEveryKindReadAndWriteByteForByte)
{
    const RunConfig c = parseRunConfig(kStoredBeforeLayerKinds, "stored run");
    std::vector<LayerKind> kinds;
    for (const LayerSpec& layer : c.model.layers)
        kinds.push_back(layer.type);
    const std::vector<LayerKind> expected{
        LayerKind::Conv2d,  LayerKind::BatchNorm, LayerKind::Gelu,    LayerKind::Residual, LayerKind::Residual,
        LayerKind::MaxPool, LayerKind::AvgPool,   LayerKind::Sigmoid, LayerKind::Flatten,  LayerKind::Dropout,
        LayerKind::Linear,  LayerKind::Relu,      LayerKind::Linear};
    EXPECT_EQ(kinds, expected);
    std::vector<LayerKind> nested = kinds; // with the residual blocks' layers
    for (const LayerSpec& layer : c.model.layers)
        for (const LayerSpec& inner : layer.body)
            nested.push_back(inner.type);
    // Every kind that existed when it was stored; the transformer kinds (issue 18) came later and
    // round-trip in transformer_layers_test.
    for (const EnumEntry<LayerKind>& entry : enumEntries<LayerKind>()) {
        if (entry.value <= LayerKind::Residual) {
            EXPECT_NE(std::find(nested.begin(), nested.end(), entry.value), nested.end())
                << entry.key << " is not covered";
        }
    }
    EXPECT_EQ(c.model.layers[3].shortcut, ShortcutKind::Identity);
    EXPECT_EQ(c.model.layers[3].body[1].type, LayerKind::Tanh);
    EXPECT_EQ(c.model.layers[4].shortcut, ShortcutKind::Projection);
    // training.cpu_kernels came after this config was stored; it is written with its default.
    nlohmann::json stored = nlohmann::json::parse(kStoredBeforeLayerKinds);
    stored["training"]["cpu_kernels"] = "auto";
    EXPECT_EQ(runConfigToJson(c, -1), stored.dump());
    EXPECT_TRUE(validateModel(c.model).valid()) << validateModel(c.model).error;
}

TEST(Config, EveryChoiceFieldNamesItselfAndItsLegalValues)
{
    const std::string layers = R"("layers": [{"type": "linear", "units": 2)";
    const auto config = [&](const std::string& layerExtra, const std::string& sections) {
        return R"({"model": {"input": [4], "classes": 2, )" + layers + layerExtra + "}]}" + sections + "}";
    };
    struct Case {
        std::string json, message;
    };
    const std::string kLayerKeys =
        "linear, conv2d, batchnorm, relu, gelu, tanh, sigmoid, maxpool, avgpool, dropout, flatten, residual, "
        "layernorm, rmsnorm, token_embedding, positional_embedding, patch_embedding, attention, mlp or transformer";
    const Case cases[] = {
        {config(R"(, "precision": "fp8")", ""),
         "test.json: model.layers[0].precision is \"fp8\"; expected auto, fp32, fp16, bf16, fp8-hybrid, "
         "fp8-e4m3, fp8-delayed, fp8-block, mxfp8, mxfp6, mxfp4 or nvfp4"},
        {config("", R"(, "precision": {"mode": "fp8"})"),
         "test.json: precision.mode is \"fp8\"; expected fp32, fp16, mixed-fp16, mixed-bf16, bf16, fp8-hybrid, "
         "fp8-e4m3, fp8-delayed, fp8-block, mxfp8, mxfp6, mxfp4 or nvfp4"},
        {config("", R"(, "precision": {"loss_scale": {"type": "dynamc"}})"),
         "test.json: precision.loss_scale.type is \"dynamc\"; expected auto, none, static or dynamic"},
        {config("", R"(, "optimizer": {"type": "rmsprop"})"),
         "test.json: optimizer.type is \"rmsprop\"; expected sgd, adam or adamw"},
        {config("", R"(, "schedule": {"type": "cosin"})"),
         "test.json: schedule.type is \"cosin\"; expected constant, step, cosine or one-cycle"},
        {config("", R"(, "data": {"dataset": "cifar"})"),
         "test.json: data.dataset is \"cifar\"; expected fashion-mnist, mnist, synthetic, text or files"},
        {config("", R"(, "training": {"graphs": "always"})"),
         "test.json: training.graphs is \"always\"; expected auto, on or off"},
        {config("", R"(, "training": {"run_ahead": "yes"})"),
         "test.json: training.run_ahead is \"yes\"; expected auto, on or off"},
        // A layer type or shortcut the engine does not know: the layer is named by its index,
        // inside a residual by the path to it.
        {R"({"model": {"input": [4], "classes": 2, "layers": [{"type": "relu"}, {"type": "lstm"}]}})",
         "test.json: model.layers[1].type is \"lstm\"; expected " + kLayerKeys},
        {R"({"model": {"input": [4], "classes": 2, "layers": [{"type": "residual", "layers": [{"type": "Linear"}]}]}})",
         "test.json: model.layers[0].layers[0].type is \"Linear\"; expected " + kLayerKeys},
        {R"({"model": {"input": [4], "classes": 2, "layers": [{"type": "residual", "shortcut": "gated", "layers": []}]}})",
         "test.json: model.layers[0].shortcut is \"gated\"; expected identity or projection"},
        {config(R"(, "activation": "swish")", ""),
         "test.json: model.layers[0].activation is \"swish\"; expected none, relu, gelu, tanh or sigmoid"},
    };
    for (const Case& c : cases)
        EXPECT_EQ(errorOf(c.json), c.message) << c.json;
    // "none" is the same as no fused activation, and is not written back.
    const RunConfig none = parseRunConfig(config(R"(, "activation": "none")", ""), "test.json");
    EXPECT_FALSE(none.model.layers[0].activation.has_value());
    EXPECT_EQ(runConfigToJson(none).find("activation"), std::string::npos);
    // A choice given as another JSON type is a type error, not an unknown value.
    EXPECT_NE(errorOf(config("", R"(, "optimizer": {"type": 3})")).find("optimizer.type has the wrong type"),
              std::string::npos);
}

// docs/config.md's field reference is the engine's tables, written out: a field, a default, a
// range or a legal value that changes in the engine changes the docs, or this fails.
TEST(Config, TheDocsHoldTheGeneratedFieldReference)
{
    std::ifstream doc(MANTISSA_CONFIG_DOC);
    ASSERT_TRUE(doc) << "cannot read " << MANTISSA_CONFIG_DOC;
    std::stringstream text;
    text << doc.rdbuf();
    const std::string docs = text.str();
    const std::size_t begin = docs.find(kConfigDocsBegin);
    const std::size_t end = docs.find(kConfigDocsEnd);
    ASSERT_NE(begin, std::string::npos) << "docs/config.md lost its generated tables' first marker";
    ASSERT_NE(end, std::string::npos) << "docs/config.md lost its generated tables' last marker";
    const bool same =
        docs.substr(begin, end + std::string(kConfigDocsEnd).size() + 1 - begin) == configFieldsMarkdown();
    EXPECT_TRUE(same) << "docs/config.md's field reference differs from the engine's tables: run "
                         "scripts/update-config-docs";
}

TEST(Config, EveryPresetIsValid)
{
    const auto names = presetNames();
    for (const char* expected :
         {"softmax", "mlp", "cnn", "wide-mlp", "deep-mlp", "deep-sigmoid", "vgg-small", "resnet-small"})
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
    EXPECT_NE(report.error.find("layer 9 (linear): expects 3136 inputs, receives 1568"), std::string::npos)
        << report.error;
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
