// The config field tables (engine/config/config_field.h): every row is consistent with itself
// (a legal default, a unique path, text that reads back), and a row is enough for a field to be
// parsed, written, validated and set from text.
#include "engine/config/config_field.h"
#include "engine/config/presets.h"
#include "engine/config/run_config.h"
#include "engine/util/check.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>

using namespace mantissa;

namespace {

std::string errorOf(const std::function<void()>& action)
{
    try {
        action();
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "(no error)";
}

} // namespace

TEST(ConfigField, EveryRowHasAUniquePathALegalDefaultAndADescription)
{
    std::set<std::string_view> paths, options;
    const RunConfig defaults;
    for (const RunField& field : runConfigFields()) {
        EXPECT_TRUE(paths.insert(field.path).second) << field.path << " appears twice";
        if (!field.option.empty()) {
            EXPECT_TRUE(options.insert(field.option).second) << "--" << field.option << " appears twice";
        }
        EXPECT_FALSE(field.label.empty()) << field.path;
        EXPECT_FALSE(field.description.empty()) << field.path;
        EXPECT_EQ(field.problem(defaults), "") << field.path;
        EXPECT_TRUE(field.isDefault(defaults)) << field.path;
        if (field.kind() == FieldKind::Integer || field.kind() == FieldKind::Real) {
            EXPECT_TRUE(field.hasRange()) << field.path << " has no range";
        }
    }
    EXPECT_EQ(runConfigFields().size(), 93u) << "a field was added or lost: update docs/config.md";
    for (const LayerSpecField& field : layerSpecFields())
        EXPECT_EQ(field.problem(LayerSpec{}), "") << field.path;
}

// Each field's text reads back to the same value, so the CLI, the layer editor's cells and the
// docs' defaults say exactly what the config holds.
TEST(ConfigField, TextReadsBackToTheSameValue)
{
    for (const std::string& name : presetNames()) {
        const RunConfig preset = presetConfig(name);
        for (const RunField& field : runConfigFields()) {
            RunConfig copy;
            field.setText(copy, field.text(preset), std::string(field.path));
            EXPECT_EQ(field.text(copy), field.text(preset)) << name << ": " << field.path;
        }
        for (const LayerSpec& layer : preset.model.layers)
            for (const LayerSpecField& field : layerSpecFields()) {
                LayerSpec copy;
                field.setText(copy, field.text(layer), std::string(field.path));
                EXPECT_EQ(field.text(copy), field.text(layer)) << name << ": " << field.path;
            }
    }
}

TEST(ConfigField, SettingFromTextChecksTypeAndRangeAndNamesWhere)
{
    RunConfig c;
    const RunField& batch = runConfigField("training.batch_size");
    batch.setText(c, "96", "--batch-size");
    EXPECT_EQ(c.training.batchSize, 96);
    EXPECT_EQ(errorOf([&] { batch.setText(c, "0", "--batch-size"); }),
              "--batch-size must be 1 to 65536 samples (got 0)");
    EXPECT_EQ(errorOf([&] { batch.setText(c, "lots", "--batch-size"); }),
              "--batch-size is \"lots\": is not an integer");
    EXPECT_EQ(c.training.batchSize, 96) << "a refused value leaves the field as it was";
    const RunField& mode = runConfigField("precision.mode");
    mode.setText(c, "mxfp8", "--precision");
    EXPECT_EQ(c.precision, PrecisionMode::Mxfp8);
    EXPECT_NE(errorOf([&] { mode.setText(c, "fp7", "--precision"); }).find("--precision is \"fp7\"; expected fp32, "),
              std::string::npos);
    const RunField& input = runConfigField("model.input");
    input.setText(c, "3, 32, 32", "--set model.input");
    EXPECT_EQ(c.model.input, (std::vector<std::int64_t>{3, 32, 32}));
    EXPECT_EQ(errorOf([&] { input.setText(c, "3, 0, 32", "--set model.input"); }),
              "--set model.input must be 1 to 2^24 (got 0)");
    input.setText(c, "1x28x28", "--set model.input");
    EXPECT_EQ(c.model.input, (std::vector<std::int64_t>{1, 28, 28}));
    for (const char* bad : {"3,x,32", "3x", "x3", "3,,x"})
        EXPECT_EQ(errorOf([&] { input.setText(c, bad, "--set model.input"); }),
                  "--set model.input is \"" + std::string(bad) + "\": is not a list of integers such as \"1, 28, 28\"")
            << bad;
    EXPECT_EQ(c.model.input, (std::vector<std::int64_t>{1, 28, 28})) << "a refused list leaves the field as it was";
    const RunField& lr = runConfigField("optimizer.lr");
    lr.setText(c, "0.003", "lr");
    EXPECT_FLOAT_EQ(c.optimizer.lr, 0.003f);
    EXPECT_EQ(lr.text(c), "0.003");
}

// The parser refuses what a row's range refuses, naming the field, at any depth of the layers.
TEST(ConfigField, TheParserAppliesEveryRowsRange)
{
    const auto parse = [](const std::string& json) { return errorOf([&] { parseRunConfig(json, "t.json"); }); };
    EXPECT_EQ(parse(R"({"model": {"layers": []}, "numerics": {"every": 1001}})"),
              "t.json: numerics.every must be 0 to 1000 steps (got 1001)");
    EXPECT_EQ(parse(R"({"model": {"layers": []}, "precision": {"loss_scale": {"hysteresis": 0}}})"),
              "t.json: precision.loss_scale.hysteresis must be 1 to 2^24 (got 0)");
    EXPECT_EQ(parse(R"({"model": {"layers": [{"type": "residual", "layers": [{"type": "dropout", "rate": 1.5}]}]}})"),
              "t.json: model.layers[0].layers[0].rate must be 0 to 0.99 (got 1.5)");
    EXPECT_EQ(parse(R"({"model": {"layers": [{"type": "attention", "heads": 0}]}})"),
              "t.json: model.layers[0].heads must be 1 to 4096 (got 0)");
}

// The writer follows each row's rule: a field added after runs were stored is written only when
// set, and a section that does not apply is left out.
TEST(ConfigField, TheWriterFollowsEachRowsRule)
{
    RunConfig c = presetConfig("mlp");
    c.description.clear();
    auto json = nlohmann::json::parse(runConfigToJson(c));
    EXPECT_FALSE(json.contains("description"));
    EXPECT_FALSE(json["precision"].contains("recipe"));
    EXPECT_FALSE(json.contains("distributed"));
    EXPECT_FALSE(json["data"].contains("context"));
    EXPECT_FALSE(json["training"].contains("fp8_gemm"));
    c.precision = PrecisionMode::Nvfp4;
    c.distributed.worldSize = 2;
    json = nlohmann::json::parse(runConfigToJson(c));
    EXPECT_TRUE(json["precision"].contains("recipe"));
    EXPECT_FALSE(json["precision"]["recipe"].contains("attention")) << "written only when set";
    EXPECT_EQ(json["distributed"]["world_size"], 2);
    EXPECT_EQ(json["distributed"]["reduction"], "sum-then-divide");
}

TEST(ConfigField, LayerSummariesShowTheKindsFieldsAndChangedOptions)
{
    LayerSpec linear;
    linear.units = 128;
    linear.activation = Activation::Relu;
    EXPECT_EQ(layerSummary(linear), "linear units=128, activation=relu");
    linear.bias = false;
    linear.precision = LayerPrecision::Fp32;
    EXPECT_EQ(layerSummary(linear), "linear units=128, activation=relu, bias=false [fp32]");
    LayerSpec block;
    block.type = LayerKind::Transformer;
    block.heads = 4;
    block.causal = true;
    EXPECT_EQ(layerParamsText(block), "heads=4, units=0, causal=true, norm=layernorm, epsilon=1e-05");
    block.softmax = InternalPrecision::Compute;
    EXPECT_EQ(layerParamsText(block), "heads=4, units=0, causal=true, norm=layernorm, softmax=compute, epsilon=1e-05");
    LayerSpec residual;
    residual.type = LayerKind::Residual;
    residual.body.resize(2);
    EXPECT_EQ(layerSummary(residual), "residual shortcut=identity, 2 layers");
}
