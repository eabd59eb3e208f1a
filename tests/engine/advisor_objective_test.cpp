// What the advisor maximises (bits a format saves, times FLOPs or weights) and the rules of
// thumb it is measured against, on hand-made layer lists.
#include "engine/advisor/advisor_objective.h"
#include "engine/advisor/rules_of_thumb.h"
#include "engine/config/run_config.h"

#include <gtest/gtest.h>

using namespace mantissa;

TEST(AdvisorObjective, FormatBitsCountTheScales)
{
    const RecipeOptions options;
    EXPECT_DOUBLE_EQ(formatBits(LayerPrecision::Fp32, options), 32);
    EXPECT_DOUBLE_EQ(formatBits(LayerPrecision::Bf16, options), 16);
    EXPECT_DOUBLE_EQ(formatBits(LayerPrecision::Mxfp8, options), 8.25);  // E4M3 + one E8M0 per 32
    EXPECT_DOUBLE_EQ(formatBits(LayerPrecision::Mxfp4, options), 4.25);  // E2M1 + one E8M0 per 32
    EXPECT_DOUBLE_EQ(formatBits(LayerPrecision::Fp8E4m3, options), 8.0); // one scale a tensor
    RecipeOptions rows;
    rows.weightBlocks2d = RecipeSwitch::Off;
    EXPECT_DOUBLE_EQ(formatBits(LayerPrecision::Nvfp4, rows), 4.5); // one E4M3 per 16
}

TEST(AdvisorObjective, ValuesAreSizeTimesTheBitsSaved)
{
    const std::vector<AdvisorLayer> layers{{"0.linear", 1000, 10, 32, {}}, {"1.linear", 400, 30, 16, {}}};
    const std::vector<LayerCosts> costs{{{0.1, 0.2}, {true, true}}, {{0.3, 0.4}, {true, false}}};
    const std::vector<LayerPrecision> formats{LayerPrecision::Mxfp8, LayerPrecision::Mxfp4};
    const AssignmentProblem flops =
        advisorProblem(layers, costs, formats, RecipeOptions{}, AdvisorObjective::Flops, 0.25);
    EXPECT_DOUBLE_EQ(flops.budget, 0.25);
    EXPECT_DOUBLE_EQ(flops.layers[0][0].value, 1000 * (1 - 8.25 / 32));
    EXPECT_DOUBLE_EQ(flops.layers[0][1].value, 1000 * (1 - 4.25 / 32));
    EXPECT_DOUBLE_EQ(flops.layers[1][0].value, 400 * (1 - 8.25 / 16));
    EXPECT_DOUBLE_EQ(flops.layers[1][1].lossIncrease, 0.4);
    EXPECT_FALSE(flops.layers[1][1].allowed);
    const AssignmentProblem memory =
        advisorProblem(layers, costs, formats, RecipeOptions{}, AdvisorObjective::Memory, 0.25);
    EXPECT_DOUBLE_EQ(memory.layers[1][1].value, 30 * (1 - 4.25 / 16));
}

TEST(RulesOfThumb, EachRuleKeepsItsLayers)
{
    // Seven GEMM layers; the fourth has a width of 100; the sixth cannot take the format.
    std::vector<AdvisorLayer> layers;
    for (int i = 0; i < 7; ++i)
        layers.push_back({std::to_string(i) + ".linear", 1, 1, 16, {{"in features", i == 3 ? 100 : 64}}});
    const std::vector<bool> fits{true, true, true, true, true, false, true};
    const std::vector<RuleOfThumb> rules = rulesOfThumb(layers, fits, {"0.linear", "6.linear"});
    ASSERT_EQ(rules.size(), 3u);
    EXPECT_EQ(rules[0].name, "keep-first-last");
    EXPECT_EQ(rules[0].low, (std::vector<std::string>{"1.linear", "2.linear", "3.linear", "4.linear"}));
    EXPECT_EQ(rules[1].name, "keep-last-16%"); // 16% of 7 rounds up to 2 kept
    EXPECT_EQ(rules[1].low, (std::vector<std::string>{"0.linear", "1.linear", "2.linear", "3.linear", "4.linear"}));
    EXPECT_EQ(rules[2].name, "multiples-of-16");
    EXPECT_EQ(rules[2].low, (std::vector<std::string>{"0.linear", "1.linear", "2.linear", "4.linear", "6.linear"}));
}

TEST(RulesOfThumb, KeepFirstLastIsTheEnginesRule)
{
    // A transformer block: its query, key and value projections read the same input, so the
    // first GEMM kept is all three; the last is the head.
    const RunConfig config = parseRunConfig(R"({"model": {"input": [8], "classes": 16, "layers": [
        {"type": "token_embedding", "vocabulary": 16, "units": 32},
        {"type": "transformer", "heads": 2},
        {"type": "linear", "units": 16}]}})",
                                            "test");
    EXPECT_EQ(layersKeptFirstAndLast(config.model),
              (std::vector<std::string>{"1.transformer.attention.query", "1.transformer.attention.key",
                                        "1.transformer.attention.value", "2.linear"}));
}
