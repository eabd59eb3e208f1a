// The tensor-core alignment advice: for layers that compute in fp16 or bf16, every GEMM and
// convolution extent that is not a multiple of 8 is named with the nearest ones that are, and
// so is the batch size; layers in fp32 (by mode or by override) get no advice.
#include "engine/backend/cuda_options.h"
#include "engine/config/run_config.h"
#include "engine/model/tensor_core_alignment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace mantissa;

namespace {

RunConfig configFromJson(const std::string& mode, const std::string& input, const std::string& layers, int classes,
                         int batch)
{
    const std::string json = R"({"model": {"input": )" + input + R"(, "classes": )" + std::to_string(classes) +
                             R"(, "layers": )" + layers + R"(}, "precision": {"mode": ")" + mode +
                             R"("}, "training": {"batch_size": )" + std::to_string(batch) + "}}";
    return parseRunConfig(json, "test");
}

using V = AlignmentVerdict;

struct AlignmentCase {
    std::string name;
    std::string mode, input, layers;
    int classes, batch;
    std::vector<AlignmentVerdict> verdicts;  // per layer
    std::vector<std::string> misaligned;     // "layer:extent=value", every one, in order
    std::int64_t batchBelow, batchAbove;     // the batch suggestion; 0, 0: no batch advice
    std::vector<std::string> messagePhrases; // each appears in one of the advice lines
};

void PrintTo(const AlignmentCase& c, std::ostream* os) { *os << c.name; }

class Alignment : public ::testing::TestWithParam<AlignmentCase> {};

TEST_P(Alignment, NamesEveryMisalignedExtentOfSixteenBitLayers)
{
    const AlignmentCase& c = GetParam();
    const TensorCoreAdvice advice = tensorCoreAdvice(configFromJson(c.mode, c.input, c.layers, c.classes, c.batch));
    ASSERT_EQ(advice.layers.size(), c.verdicts.size());
    std::vector<std::string> misaligned;
    for (std::size_t i = 0; i < advice.layers.size(); ++i) {
        const LayerAlignment& layer = advice.layers[i];
        EXPECT_EQ(layer.layer, int(i));
        EXPECT_EQ(layer.verdict, c.verdicts[i]) << "layer " << i << ": " << layer.reason();
        for (const MisalignedExtent& e : layer.misaligned) {
            misaligned.push_back(std::to_string(i) + ":" + e.name + "=" + std::to_string(e.value));
            EXPECT_NE(e.value % 8, 0);
            EXPECT_EQ(e.below % 8, 0);
            EXPECT_EQ(e.above, e.below + 8);
            EXPECT_TRUE(e.below < e.value && e.value < e.above) << e.name;
        }
    }
    EXPECT_EQ(misaligned, c.misaligned);
    if (c.batchAbove == 0) {
        EXPECT_FALSE(advice.batch.has_value());
    } else {
        ASSERT_TRUE(advice.batch.has_value());
        EXPECT_EQ(advice.batch->value, c.batch);
        EXPECT_EQ(advice.batch->below, c.batchBelow);
        EXPECT_EQ(advice.batch->above, c.batchAbove);
    }
    const std::vector<std::string> lines = advice.messages();
    const std::size_t misalignedLayers =
        std::size_t(std::count(c.verdicts.begin(), c.verdicts.end(), AlignmentVerdict::Misaligned));
    EXPECT_EQ(lines.size(), misalignedLayers + (c.batchAbove != 0 ? 1 : 0));
    for (const std::string& phrase : c.messagePhrases) {
        bool found = false;
        for (const std::string& line : lines)
            found |= line.find(phrase) != std::string::npos;
        EXPECT_TRUE(found) << "\"" << phrase << "\" in none of " << ::testing::PrintToString(lines);
    }
}

const std::string kMlp = R"([{"type": "linear", "units": 64, "activation": "relu"}, {"type": "linear", "units": 10}])";
const std::string kConv = R"([{"type": "conv2d", "filters": 16, "activation": "relu"}, {"type": "maxpool", "kernel": 2},
                              {"type": "flatten"}, {"type": "linear", "units": 16}])";

const AlignmentCase kCases[] = {
    {"alignedMixedFp16",
     "mixed-fp16",
     "[32]",
     R"([{"type": "linear", "units": 64, "activation": "relu"}, {"type": "linear", "units": 8}])",
     8,
     32,
     {V::Aligned, V::Aligned},
     {},
     0,
     0,
     {}},
    // fp32 runs get no advice however odd the extents and the batch.
    {"fp32NoAdvice", "fp32", "[30]", kMlp, 10, 100, {V::Fp32, V::Fp32}, {}, 0, 0, {}},
    {"tenClassesBf16",
     "bf16",
     "[32]",
     kMlp,
     10,
     100,
     {V::Aligned, V::Misaligned},
     {"1:out features=10"},
     96,
     104,
     {"layer 1 (linear), bf16: out features = 10 is not a multiple of 8", "out features: 8 or 16",
      "batch size 100 is not a multiple of 8", "96 or 104 would use them fully"}},
    {"oddInputPureFp16",
     "fp16",
     "[30]",
     kMlp,
     10,
     64,
     {V::Misaligned, V::Misaligned},
     {"0:in features=30", "1:out features=10"},
     0,
     0,
     {"layer 0 (linear), fp16: in features = 30 is not a multiple of 8", "in features: 24 or 32"}},
    // A convolution: one input channel and a 3x3 kernel give a GEMM K of 9; 16 filters are fine.
    {"convMixedFp16",
     "mixed-fp16",
     "[1, 12, 12]",
     kConv,
     16,
     4,
     {V::Misaligned, V::NoGemm, V::NoGemm, V::Aligned},
     {"0:in channels=1", "0:GEMM K (in channels x kernel area)=9"},
     0,
     8,
     {"layer 0 (conv2d), fp16: in channels = 1 and GEMM K (in channels x kernel area) = 9 are not multiples of 8",
      "in channels: 8;", "batch size 4 is not a multiple of 8", "; 8 would use them fully"}},
    // An override to fp32 takes the layer off tensor cores: no advice for its 10 outputs, but
    // the batch still matters to the first layer's fp16 GEMMs.
    {"fp32OverrideMixedFp16",
     "mixed-fp16",
     "[32]",
     R"([{"type": "linear", "units": 64}, {"type": "linear", "units": 10, "precision": "fp32"}])",
     10,
     20,
     {V::Aligned, V::Fp32},
     {},
     16,
     24,
     {"batch size 20"}},
    // And an fp16 override in an fp32 run puts that layer on them.
    {"fp16OverrideFp32",
     "fp32",
     "[32]",
     R"([{"type": "linear", "units": 12, "precision": "fp16"}, {"type": "linear", "units": 10}])",
     10,
     20,
     {V::Misaligned, V::Fp32},
     {"0:out features=12"},
     16,
     24,
     {"layer 0 (linear), fp16: out features = 12"}},
};

INSTANTIATE_TEST_SUITE_P(Shapes, Alignment, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return info.param.name; });

// The same misaligned model in every mode: advice exactly where the layers compute in 16 bits.
class AlignmentPerMode : public ::testing::TestWithParam<PrecisionMode> {};

TEST_P(AlignmentPerMode, AdvisesOnlySixteenBitModes)
{
    const PrecisionMode mode = GetParam();
    const TensorCoreAdvice advice = tensorCoreAdvice(configFromJson(precisionModeName(mode), "[30]", kMlp, 10, 100));
    const bool sixteenBit = mode != PrecisionMode::Fp32;
    EXPECT_EQ(advice.messages().size(), sixteenBit ? 3u : 0u) << ::testing::PrintToString(advice.messages());
    const DType compute = PrecisionPolicy(mode).layer().compute();
    for (const LayerAlignment& layer : advice.layers) {
        EXPECT_EQ(layer.compute, compute);
        EXPECT_EQ(layer.verdictText(), sixteenBit ? "no" : "fp32");
        EXPECT_NE(layer.reason().find(sixteenBit ? "tiles of 8" : "computes in fp32"), std::string::npos)
            << layer.reason();
    }
}

INSTANTIATE_TEST_SUITE_P(Modes, AlignmentPerMode,
                         ::testing::Values(PrecisionMode::Fp32, PrecisionMode::Fp16, PrecisionMode::MixedFp16,
                                           PrecisionMode::MixedBf16, PrecisionMode::Bf16),
                         [](const auto& info) {
                             std::string name = precisionModeName(info.param);
                             std::erase(name, '-');
                             return name;
                         });

TEST(AlignmentOfBlocks, ResidualBlockListsItsBodyExtentsAndLayerTextsMatchTheTable)
{
    const RunConfig config = configFromJson(
        "mixed-fp16", "[32]",
        R"([{"type": "residual", "layers": [{"type": "linear", "units": 12}, {"type": "linear", "units": 32}]},
            {"type": "linear", "units": 8}])",
        8, 64);
    const TensorCoreAdvice advice = tensorCoreAdvice(config);
    ASSERT_EQ(advice.layers.size(), 2u);
    const LayerAlignment& block = advice.layers[0];
    EXPECT_EQ(block.verdictText(), "no");
    ASSERT_EQ(block.misaligned.size(), 2u);
    EXPECT_EQ(block.misaligned[0].name, "0.residual.0.linear: out features");
    EXPECT_EQ(block.misaligned[1].name, "0.residual.1.linear: in features");
    EXPECT_EQ(advice.layers[1].verdictText(), "yes");
    EXPECT_EQ(advice.layers[1].reason(), "every extent is a multiple of 8 (in features = 32, out features = 8)");
    EXPECT_FALSE(advice.batch.has_value());
    ASSERT_EQ(advice.messages().size(), 1u);
    EXPECT_EQ(advice.messages()[0].rfind("layer 0 (residual), fp16: 0.residual.0.linear: out features = 12 and", 0), 0u)
        << advice.messages()[0];
}

// A transformer block's extents are its GEMMs', each by its full name: the projections, the
// attention's two batched products (head dimension, sequence) and the MLP's.
TEST(AlignmentOfBlocks, TransformerNamesEveryGemmByItsFullName)
{
    const RunConfig config = configFromJson("mixed-bf16", "[12, 20]",
                                            R"([{"type": "transformer", "heads": 2, "units": 40},
                                                {"type": "flatten"}, {"type": "linear", "units": 8}])",
                                            8, 64);
    const TensorCoreAdvice advice = tensorCoreAdvice(config);
    const LayerAlignment& block = advice.layers[0];
    std::vector<std::string> names;
    for (const MisalignedExtent& e : block.misaligned)
        names.push_back(e.name + " = " + std::to_string(e.value));
    EXPECT_EQ(
        names,
        (std::vector<std::string>{
            "0.transformer.attention.query: in features = 20", "0.transformer.attention.query: out features = 20",
            "0.transformer.attention.key: in features = 20", "0.transformer.attention.key: out features = 20",
            "0.transformer.attention.value: in features = 20", "0.transformer.attention.value: out features = 20",
            "0.transformer.attention.scores: head dimension = 10",
            "0.transformer.attention.scores: sequence length = 12",
            "0.transformer.attention.context: head dimension = 10",
            "0.transformer.attention.context: sequence length = 12", "0.transformer.attention.output: in features = 20",
            "0.transformer.attention.output: out features = 20", "0.transformer.mlp.up: in features = 20",
            "0.transformer.mlp.down: out features = 20"}));
}

// Under a recipe a GEMM's rule is its format's: FP8 tensor cores' multiple for the per-tensor
// FP8 recipes, over every extent; a block format's block, over the widths its blocks run along;
// unquantised 16-bit GEMMs keep the tiles of 8, and fp32 has none.
TEST(AlignmentRules, EachFormatWantsItsOwnMultiple)
{
    EXPECT_EQ(alignmentRule(DType::F32).multiple, 0);
    const AlignmentRule sixteen = alignmentRule(DType::BF16);
    EXPECT_EQ(sixteen.multiple, kTensorCoreMultiple);
    EXPECT_FALSE(sixteen.alongK);
    for (GemmRecipe recipe : {GemmRecipe::Fp8Hybrid, GemmRecipe::Fp8E4m3, GemmRecipe::Fp8Delayed}) {
        const AlignmentRule rule = alignmentRule(DType::BF16, OperandRecipes::all(recipe));
        EXPECT_EQ(rule.multiple, kFp8GemmMultiple) << gemmRecipeName(recipe);
        EXPECT_FALSE(rule.alongK);
        EXPECT_EQ(rule.format, gemmRecipeName(recipe));
    }
    for (GemmRecipe recipe :
         {GemmRecipe::Fp8Block, GemmRecipe::Mxfp8, GemmRecipe::Mxfp6, GemmRecipe::Mxfp4, GemmRecipe::Nvfp4}) {
        const AlignmentRule rule = alignmentRule(DType::BF16, OperandRecipes::all(recipe));
        EXPECT_EQ(rule.multiple, static_cast<std::int64_t>(recipeBlockSize(recipe))) << gemmRecipeName(recipe);
        EXPECT_TRUE(rule.alongK);
    }
    EXPECT_EQ(alignmentRule(DType::BF16, OperandRecipes::all(GemmRecipe::Mxfp8)).multiple, 32);
    EXPECT_EQ(alignmentRule(DType::BF16, OperandRecipes::all(GemmRecipe::Nvfp4)).multiple, 16);
}

} // namespace
