// Every GEMM at any depth takes the run's recipe: over every preset and every recipe, the
// layers whose GEMM inputs were quantised in a real training step (the numerics lens's
// records) are the layers the policy says (gemm_coverage.h), and those are every layer with a
// matrix weight (or a tied one) minus the first and last GEMMs where keep_first_last keeps
// them. The expectation comes from the parameters, not from the walk over sublayers, so a
// layer kind that holds GEMMs and does not pass the precision on fails here. And a recipe that
// quantises something trains to other loss bits than mixed-bf16.
#include "engine/backend/backend.h"
#include "engine/config/presets.h"
#include "engine/data/dataset.h"
#include "engine/model/model.h"
#include "engine/train/trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

using namespace mantissa;

namespace {

constexpr PrecisionMode kRecipes[] = {PrecisionMode::Fp8Hybrid, PrecisionMode::Fp8E4m3, PrecisionMode::Fp8Delayed,
                                      PrecisionMode::Fp8Block,  PrecisionMode::Mxfp8,   PrecisionMode::Mxfp6,
                                      PrecisionMode::Mxfp4,     PrecisionMode::Nvfp4};

struct Recorder final : TrainingObserver {
    std::vector<float> losses;
    std::set<std::string> quantised; // layers with a quantised GEMM input on a sampled step
    void onStep(const StepRecord& r) override { losses.push_back(r.loss); }
    void onNumerics(const NumericsRecord& n) override
    {
        for (const GemmInputNumerics& g : n.gemmInputs)
            quantised.insert(g.layer);
    }
};

// One step of a small batch, sampled by the lens.
RunConfig shortRun(const std::string& preset, PrecisionMode mode)
{
    RunConfig c = presetConfig(preset);
    c.precision = mode;
    c.training.batchSize = 8;
    c.training.maxSteps = 1;
    c.training.threads = 1;
    c.numerics.every = 1;
    c.data.limitTrain = 64;
    c.data.limitTest = 16;
    return c;
}

Recorder train(const RunConfig& config, const DatasetSplits& data)
{
    auto backend = makeCpuBackend(1);
    Trainer trainer(config, *backend, data);
    Recorder recorder;
    trainer.addObserver(&recorder);
    EXPECT_EQ(trainer.run().status, RunStatus::Finished);
    return recorder;
}

// The layers that multiply matrices, from the parameters alone, in forward order: every
// "<layer>.weight" of rank 2 or more (linear, conv2d) and every tied head, which computes with
// the token embedding's table.
std::vector<std::string> matrixLayers(const RunConfig& config)
{
    auto backend = makeCpuBackend(1);
    Model model(config.model, PrecisionMode::Fp32, *backend, 1);
    std::vector<std::string> names;
    const auto& params = model.parametersInBackwardOrder();
    for (auto it = params.rbegin(); it != params.rend(); ++it) {
        const std::string& n = (*it)->name;
        const std::string suffix = ".weight";
        if (n.size() > suffix.size() && n.ends_with(suffix) && (*it)->working.shape().rank() >= 2)
            names.push_back(n.substr(0, n.size() - suffix.size()));
    }
    // Parameters come in backward order within a layer too; a tied head has no weight of its own.
    for (std::size_t i = 0; i < config.model.layers.size(); ++i)
        if (config.model.layers[i].tied)
            names.push_back(std::to_string(i) + ".linear");
    return names;
}

} // namespace

// Trains `preset` one step under every recipe with precision.recipe.attention `attention`.
void expectRecordedCoverage(const std::string& preset, RecipeSwitch attention)
{
    RunConfig base = shortRun(preset, PrecisionMode::MixedBf16);
    base.recipe.attention = attention;
    const DatasetSplits data = loadDatasets(base.data, base.training.seed);
    std::vector<std::string> all = matrixLayers(base);
    ASSERT_FALSE(all.empty());
    // With attention's products quantised, each attention layer (named by its query
    // projection) has two more: the scores and the context.
    if (attention == RecipeSwitch::On)
        for (const std::string& name : std::vector<std::string>(all))
            if (name.ends_with(".query")) {
                const std::string layer = name.substr(0, name.size() - 6);
                all.push_back(layer + ".scores");
                all.push_back(layer + ".context");
            }
    const Recorder bf16 = train(base, data);
    EXPECT_TRUE(bf16.quantised.empty());

    for (const PrecisionMode mode : kRecipes) {
        SCOPED_TRACE(precisionModeName(mode));
        RunConfig config = base;
        config.precision = mode;
        GemmCoverage planned;
        try {
            planned = plannedGemmCoverage(config.model, mode, config.recipe);
        } catch (const ConfigError& e) {
            // NVFP4 refuses a GEMM whose widths its blocks of 16 do not divide, naming it.
            EXPECT_EQ(mode, PrecisionMode::Nvfp4) << e.what();
            EXPECT_NE(std::string(e.what()).find("is not a multiple of 16"), std::string::npos) << e.what();
            continue;
        }
        // The walk finds every matrix layer, in the order the model runs them.
        std::vector<std::string> walked;
        for (const GemmCoverageEntry& g : planned.gemms)
            walked.push_back(g.layer);
        EXPECT_EQ(std::set<std::string>(walked.begin(), walked.end()), std::set<std::string>(all.begin(), all.end()));

        // All of them minus the kept first and last where keep_first_last is on (the 4-bit
        // recipes by default): the first GEMM with those reading its input, and the last.
        std::set<std::string> expected(all.begin(), all.end());
        if (keepsFirstAndLastLayers(PrecisionPolicy(mode).recipe(), config.recipe)) {
            const std::string& first = walked.front();
            expected.erase(first);
            if (first.ends_with(".query")) { // a fused QKV projection in TE and Megatron
                const std::string layer = first.substr(0, first.size() - 6);
                expected.erase(layer + ".key");
                expected.erase(layer + ".value");
            }
            expected.erase(walked.back());
        }
        const std::vector<std::string> plannedNames = planned.quantisedLayers();
        const std::set<std::string> plannedSet(plannedNames.begin(), plannedNames.end());

        const Recorder run = train(config, data);
        EXPECT_EQ(plannedSet, expected);
        EXPECT_EQ(run.quantised, plannedSet);
        EXPECT_EQ(plannedSet.size(), planned.quantisedCount());
        if (!plannedSet.empty()) {
            EXPECT_NE(run.losses, bf16.losses) << "quantised " << plannedSet.size() << " GEMMs yet trained as bf16";
        }
    }
}

class EveryPreset : public testing::TestWithParam<std::string> {};

TEST_P(EveryPreset, QuantisesEveryGemmTheRecipeCovers) { expectRecordedCoverage(GetParam(), RecipeSwitch::Auto); }

// The transformers again with their attention products quantised.
TEST(GemmCoverage, TransformersQuantiseTheirAttentionProductsWhenAsked)
{
    for (const std::string preset : {"vit-tiny", "char-gpt"}) {
        SCOPED_TRACE(preset);
        expectRecordedCoverage(preset, RecipeSwitch::On);
    }
}

INSTANTIATE_TEST_SUITE_P(GemmCoverage, EveryPreset, testing::ValuesIn(presetNames()),
                         [](const testing::TestParamInfo<std::string>& info) {
                             std::string name = info.param;
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

// The transformers by name: what keep_first_last keeps, and the sentence the workbench shows.
TEST(GemmCoverage, TransformersKeepTheirFirstAndLastGemmsByName)
{
    const RunConfig gpt = presetConfig("char-gpt");
    const GemmCoverage gptMx8 = plannedGemmCoverage(gpt.model, PrecisionMode::Mxfp8, gpt.recipe);
    EXPECT_EQ(gptMx8.summary(), "mxfp8: 25 of 25 GEMMs quantised");
    EXPECT_EQ(gptMx8.gemms.front().layer, "2.transformer.attention.query");
    EXPECT_EQ(gptMx8.gemms.back().layer, "7.linear"); // the tied head
    const GemmCoverage gptNv = plannedGemmCoverage(gpt.model, PrecisionMode::Nvfp4, gpt.recipe);
    EXPECT_EQ(gptNv.summary(),
              "nvfp4: 21 of 25 GEMMs quantised; kept unquantised: 2.transformer.attention.query (keep_first_last: the "
              "first GEMM), 2.transformer.attention.key (keep_first_last: the first GEMM), "
              "2.transformer.attention.value (keep_first_last: the first GEMM), 7.linear (keep_first_last: the last "
              "GEMM)");
    EXPECT_FALSE(gptNv.warning());

    const RunConfig vit = presetConfig("vit-tiny");
    const GemmCoverage vitMx4 = plannedGemmCoverage(vit.model, PrecisionMode::Mxfp4, vit.recipe);
    EXPECT_EQ(vitMx4.gemms.size(), 26u);
    EXPECT_EQ(vitMx4.quantisedCount(), 24u);
    EXPECT_EQ(vitMx4.gemms.front().layer, "0.patch_embedding");
    EXPECT_EQ(vitMx4.gemms.front().kept, GemmKeptReason::FirstGemm);
    EXPECT_EQ(vitMx4.gemms[1].layer, "2.transformer.attention.query");
    EXPECT_TRUE(vitMx4.gemms[1].quantised);
    EXPECT_EQ(vitMx4.gemms[5].layer, "2.transformer.mlp.up");
    EXPECT_EQ(vitMx4.gemms.back().layer, "8.linear");
    EXPECT_EQ(vitMx4.gemms.back().kept, GemmKeptReason::LastGemm);

    // A recipe that quantises nothing says so: a one-layer model under a 4-bit recipe keeps
    // its only GEMM as both the first and the last.
    ModelSpec single;
    single.input = {32};
    single.classes = 16;
    LayerSpec linear;
    linear.type = LayerKind::Linear;
    linear.units = 16;
    single.layers = {linear};
    const GemmCoverage none = plannedGemmCoverage(single, PrecisionMode::Mxfp4);
    EXPECT_EQ(none.quantisedCount(), 0u);
    ASSERT_TRUE(none.warning());
    EXPECT_NE(none.warning()->find("quantises none of this model's 1 GEMMs"), std::string::npos);
    // Without a recipe there is nothing to say.
    EXPECT_EQ(plannedGemmCoverage(single, PrecisionMode::MixedBf16).summary(), "");
}

// NVFP4's block check reaches GEMMs inside blocks and names them by their full path.
TEST(GemmCoverage, Nvfp4NamesAGemmInsideABlockWhoseWidthItsBlocksDoNotDivide)
{
    RunConfig c = presetConfig("char-gpt");
    c.model.layers[2].units = 200; // the first block's MLP: 128 -> 200 -> 128
    try {
        plannedGemmCoverage(c.model, PrecisionMode::Nvfp4, c.recipe);
        FAIL() << "expected a ConfigError";
    } catch (const ConfigError& e) {
        EXPECT_STREQ(e.what(), "layer 2 (transformer): nvfp4 quantises blocks of 16 along K, but "
                               "2.transformer.mlp.up's out features (200) is not a multiple of 16; keep the layer in "
                               "bf16 (\"precision\": \"bf16\") or change its width");
    }
    // The same block in bf16 leaves its GEMMs unquantised, so the check does not apply.
    c.model.layers[2].precision = LayerPrecision::Bf16;
    const GemmCoverage kept = plannedGemmCoverage(c.model, PrecisionMode::Nvfp4, c.recipe);
    EXPECT_EQ(kept.gemms[3].layer, "2.transformer.attention.output");
    EXPECT_EQ(kept.gemms[3].kept, GemmKeptReason::LayerOverride);
}
