// Any format on any layer: a layer's "precision" and model.precision_overrides give a GEMM at any
// depth its own format per operand role. The CPU is the oracle: a run whose every layer states
// the recipe's format trains to the bits of the run-wide recipe, and a layer stated fp32 inside a
// recipe run computes in fp32 with nothing quantised. Bad formats and names are refused by name.
#include "engine/backend/backend.h"
#include "engine/config/presets.h"
#include "engine/config/run_config.h"
#include "engine/data/dataset.h"
#include "engine/model/layer_formats.h"
#include "engine/model/model.h"
#include "engine/train/trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace mantissa;

namespace {

constexpr std::int64_t kSteps = 3, kBatch = 4;

// char-gpt, smaller: two blocks of width 64 over 32 tokens, on fixed pseudo-random bytes.
RunConfig charGpt(PrecisionMode mode)
{
    RunConfig config = presetConfig("char-gpt");
    config.precision = mode;
    config.training.batchSize = kBatch;
    config.training.evalBatchSize = kBatch;
    config.training.maxSteps = kSteps;
    config.training.epochs = 1;
    config.training.threads = 1;
    config.training.cpuKernels = CpuKernels::Emulated;
    config.data.validationSplit = 0;
    config.model.layers.erase(config.model.layers.begin() + 4, config.model.layers.begin() + 6);
    config.model.input = {32};
    config.data.context = 32;
    return config;
}

Dataset tokenWindows(std::int64_t context, std::int64_t count, std::uint64_t salt)
{
    Dataset d;
    d.sampleShape = Shape({context});
    d.labelShape = Shape({context});
    d.classes = 256;
    d.name = "tokens";
    std::uint64_t state = 0x9e3779b97f4a7c15ULL ^ salt;
    for (std::int64_t s = 0; s < count; ++s)
        for (std::int64_t t = 0; t <= context; ++t) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            const auto byte = static_cast<float>(32 + (state >> 33) % 95);
            if (t < context)
                d.inputs.push_back(byte);
            if (t > 0)
                d.labels.push_back(byte);
        }
    return d;
}

struct LossRecorder final : TrainingObserver {
    std::vector<std::uint32_t> bits;
    void onStep(const StepRecord& r) override { bits.push_back(std::bit_cast<std::uint32_t>(r.loss)); }
};

std::vector<std::uint32_t> trainLossBits(const RunConfig& config)
{
    DatasetSplits data;
    const std::int64_t context = config.model.input[0];
    data.train = tokenWindows(context, kSteps * kBatch, 1);
    data.validation = tokenWindows(context, 0, 2);
    data.test = tokenWindows(context, kBatch, 3);
    auto backend = makeCpuBackend(1);
    Trainer trainer(config, *backend, data);
    LossRecorder recorder;
    trainer.addObserver(&recorder);
    trainer.run();
    return recorder.bits;
}

// Each layer of the built model at any depth, by name.
std::map<std::string, const Layer*> layersByName(const Model& model)
{
    std::map<std::string, const Layer*> byName;
    for (const Layer* layer : layersAtAnyDepth(model.graph()))
        byName.emplace(layer->name(), layer);
    return byName;
}

LayerFormat parsedFormat(const std::string& text)
{
    LayerFormat format;
    EXPECT_EQ(parseLayerFormat(text, format), "");
    return format;
}

TEST(LayerFormat, EveryGemmStatedAsTheRecipeTrainsToTheRunWideRecipesBits)
{
    for (const PrecisionMode recipe : {PrecisionMode::Mxfp8, PrecisionMode::Fp8Hybrid}) {
        SCOPED_TRACE(precisionModeName(recipe));
        const std::vector<std::uint32_t> runWide = trainLossBits(charGpt(recipe));
        RunConfig perLayer = charGpt(PrecisionMode::MixedBf16);
        perLayer.model.precisionOverrides["*"] = parsedFormat(precisionModeName(recipe));
        const std::vector<std::uint32_t> stated = trainLossBits(perLayer);
        ASSERT_EQ(runWide.size(), static_cast<std::size_t>(kSteps));
        EXPECT_EQ(stated, runWide);
        // And a mixed-bf16 run differs from both: the overrides did quantise.
        EXPECT_NE(trainLossBits(charGpt(PrecisionMode::MixedBf16)), runWide);
    }
}

TEST(LayerFormat, ALayerStatedFp32InsideAnMxfp8RunComputesInFp32Unquantised)
{
    RunConfig config = charGpt(PrecisionMode::Mxfp8);
    config.model.precisionOverrides["2.transformer.mlp"] = LayerPrecision::Fp32;
    config.model.precisionOverrides["*.attention.query"] = parsedFormat("inputs=mxfp4, weights=nvfp4");
    auto backend = makeCpuBackend(1);
    const Model model(config.model, config.precision, *backend, 1, config.recipe);
    const auto layers = layersByName(model);
    const Layer& mlp = *layers.at("2.transformer.mlp");
    EXPECT_EQ(mlp.computeType(), DType::F32);
    EXPECT_EQ(mlp.formatLabel(), "fp32");
    for (const std::string part : {"2.transformer.mlp.up", "2.transformer.mlp.down"}) {
        EXPECT_EQ(layers.at(part)->computeType(), DType::F32) << part;
        EXPECT_FALSE(layers.at(part)->quantisesGemms()) << part;
    }
    // The other block's MLP follows the run; each block's query projection has its own roles,
    // its gradients following the run's recipe.
    EXPECT_EQ(layers.at("3.transformer.mlp.up")->formatLabel(), "mxfp8");
    EXPECT_EQ(layers.at("3.transformer.attention.query")->formatLabel(),
              "inputs mxfp4, weights nvfp4, gradients mxfp8");
    EXPECT_EQ(layers.at("3.transformer.attention.key")->formatLabel(), "mxfp8");
    // The coverage records the formats the run's GEMMs take.
    std::set<std::string> unquantised;
    for (const GemmCoverageEntry& g : model.gemmCoverage().gemms)
        if (!g.quantised)
            unquantised.insert(g.layer);
    EXPECT_EQ(unquantised, (std::set<std::string>{"2.transformer.mlp.up", "2.transformer.mlp.down"}));
}

// What the numerics lens sees: the GEMM inputs each layer quantised on a sampled step.
struct GemmInputs final : LayerTap {
    std::map<std::string, std::set<std::string>> formats; // layer -> operand format labels
    void afterForward(std::size_t, const Tensor&) override {}
    void afterBackward(std::size_t, const Tensor&) override {}
    bool measuresGemmInputs() const override { return true; }
    void gemmInput(const std::string& layer, GemmPass, GemmOperand operand, const OperandFormat& format,
                   const QuantStats&) override
    {
        formats[layer].insert(std::string(enumKey(operand)) + " " + operandFormatLabel(format));
    }
};

TEST(LayerFormat, TheLensSeesEachLayersOwnFormat)
{
    RunConfig config = charGpt(PrecisionMode::Mxfp8);
    config.model.precisionOverrides["2.transformer.mlp"] = LayerPrecision::Fp32;
    config.model.precisionOverrides["3.transformer.mlp.up"] = parsedFormat("gradients=fp8-hybrid");
    auto backend = makeCpuBackend(1);
    Model model(config.model, config.precision, *backend, 1, config.recipe);
    const Dataset tokens = tokenWindows(config.model.input[0], 2, 7);
    Tensor x = backend->empty(Shape({2, config.model.input[0]}), DType::F32);
    backend->upload(tokens.inputs.data(), x);
    GemmInputs tap;
    PassState pass{*backend};
    pass.training = false;
    pass.tap = &tap;
    model.forward(pass, x);
    EXPECT_FALSE(tap.formats.contains("2.transformer.mlp.up"));
    EXPECT_EQ(tap.formats.at("3.transformer.mlp.down"),
              (std::set<std::string>{"activation e4m3 mx/32 floor", "weight e4m3 mx/32 floor"}));
    EXPECT_EQ(tap.formats.at("3.transformer.mlp.up"),
              (std::set<std::string>{"activation e4m3 mx/32 floor", "weight e4m3 mx/32 floor"}));
}

TEST(LayerFormat, ReadsAndWritesBothFormsAndLeavesAutoUnwritten)
{
    const std::string json = R"({"model": {"input": [16], "classes": 4, "layers": [
        {"type": "linear", "units": 32, "precision": "mxfp8"},
        {"type": "linear", "units": 4, "precision": {"weights": "mxfp4", "gradients": "fp8-hybrid"}}],
        "precision_overrides": {"0.linear": {"inputs": "bf16"}, "*": "fp8-block"}}})";
    const RunConfig config = parseRunConfig(json, "test");
    EXPECT_EQ(config.model.layers[0].precision, LayerFormat(LayerPrecision::Mxfp8));
    EXPECT_EQ(layerFormatText(config.model.layers[1].precision), "inputs=auto, weights=mxfp4, gradients=fp8-hybrid");
    EXPECT_EQ(layerFormatText(config.model.precisionOverrides.at("0.linear")),
              "inputs=bf16, weights=auto, gradients=auto");
    const RunConfig again = parseRunConfig(runConfigToJson(config), "again");
    EXPECT_EQ(again.model.layers[1].precision, config.model.layers[1].precision);
    EXPECT_EQ(again.model.precisionOverrides, config.model.precisionOverrides);
    EXPECT_NE(runConfigToJson(config, -1).find(R"({"gradients":"fp8-hybrid","weights":"mxfp4"})"), std::string::npos);
    // Auto layers and an empty map write nothing new.
    const std::string plain = runConfigToJson(presetConfig("mlp"));
    EXPECT_EQ(plain.find("precision_overrides"), std::string::npos);
}

void expectRefused(const std::string& json, const std::vector<std::string>& words)
{
    try {
        parseRunConfig(json, "test");
        FAIL() << "accepted " << json;
    } catch (const ConfigError& e) {
        for (const std::string& word : words)
            EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what() << " lacks " << word;
    }
}

TEST(LayerFormat, RefusesUnknownRolesFormatsAndTwoComputeTypes)
{
    const std::string head = R"({"model": {"input": [16], "classes": 4, "layers": [{"type": "linear", "units": 4, )";
    expectRefused(head + R"("precision": {"activations": "mxfp8"}}]}})",
                  {"model.layers[0]", "precision", "no role \"activations\"", "inputs, weights, gradients"});
    expectRefused(head + R"("precision": {"weights": "mxfp5"}}]}})", {"model.layers[0]", "(weights)", "mxfp5"});
    expectRefused(head + R"("precision": {"inputs": "fp32", "gradients": "bf16"}}]}})",
                  {"model.layers[0]", "two compute types"});
    expectRefused(R"({"model": {"input": [16], "classes": 4, "layers": [{"type": "linear", "units": 4}],
                      "precision_overrides": {"0.linear": {"weight": "nvfp4"}}}})",
                  {"model.precision_overrides", "0.linear", "no role \"weight\""});
}

void expectModelRefused(const RunConfig& config, const std::vector<std::string>& words)
{
    auto backend = makeCpuBackend(1);
    try {
        const Model model(config.model, config.precision, *backend, 1, config.recipe);
        FAIL() << "built";
    } catch (const ConfigError& e) {
        for (const std::string& word : words)
            EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what() << " lacks " << word;
    }
}

TEST(LayerFormat, RefusesUnknownNamesMisfitBlocksAndAnotherTypeInsideAHolder)
{
    RunConfig unknown = charGpt(PrecisionMode::MixedBf16);
    unknown.model.precisionOverrides["2.transformer.mlp.upp"] = LayerPrecision::Mxfp8;
    expectModelRefused(
        unknown, {"model.precision_overrides", "\"2.transformer.mlp.upp\"", "names no layer", "2.transformer.mlp.up"});

    RunConfig inside = charGpt(PrecisionMode::MixedBf16);
    inside.model.precisionOverrides["2.transformer.attention.value"] = LayerPrecision::Fp32;
    expectModelRefused(inside, {"2.transformer.attention.value", "computes in bf16", "set fp32 on the layer"});

    // NVFP4's blocks of 16 along K: a linear layer reading 100 features cannot take it.
    RunConfig misfit = charGpt(PrecisionMode::MixedBf16);
    misfit.model.input = {100};
    misfit.model.classes = 4;
    misfit.model.layers.clear();
    LayerSpec linear;
    linear.type = LayerKind::Linear;
    linear.units = 32;
    misfit.model.layers = {linear, linear};
    misfit.model.layers[1].units = 4;
    misfit.model.precisionOverrides["0.linear"] = parsedFormat("weights=nvfp4");
    expectModelRefused(misfit, {"0.linear", "in features (100)", "multiple of 16", "precision_overrides"});
}

TEST(LayerFormat, AStatedFormatOutranksKeepFirstLast)
{
    // nvfp4 keeps the first and the last GEMMs in bf16 unless the layer states its own format.
    RunConfig config = charGpt(PrecisionMode::Nvfp4);
    const std::string last = "5.linear";
    config.model.precisionOverrides[last] = LayerPrecision::Nvfp4;
    auto backend = makeCpuBackend(1);
    const Model model(config.model, config.precision, *backend, 1, config.recipe);
    const GemmCoverage& coverage = model.gemmCoverage();
    ASSERT_FALSE(coverage.gemms.empty());
    EXPECT_EQ(coverage.gemms.back().layer, last);
    EXPECT_TRUE(coverage.gemms.back().quantised);
    EXPECT_FALSE(coverage.gemms.front().quantised);
    EXPECT_EQ(coverage.gemms.front().kept, GemmKeptReason::FirstGemm);
}

} // namespace
