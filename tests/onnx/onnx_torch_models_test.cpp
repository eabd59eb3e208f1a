// Every PyTorch reference model (make_fixtures.py) imports to a graph the engine can compile:
// no unsupported node, every shape static, no shape arithmetic left, and exactly torch's
// parameters as trainable parameters.
#include "engine/onnx/import_onnx.h"
#include "engine/onnx/op_support.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <set>

namespace mantissa::onnx_import {
namespace {

const std::string kModels = std::string(MANTISSA_ONNX_MODELS) + "/torch/";

struct Fixture {
    nlohmann::json facts;
    OnnxGraph graph;
};

Fixture load(const std::string& name)
{
    std::ifstream file(kModels + name + ".json");
    if (!file)
        throw std::runtime_error("no fixture " + kModels + name + ".json (onnx_make_fixtures makes it)");
    Fixture fixture;
    fixture.facts = nlohmann::json::parse(file);
    ImportOptions options;
    options.sampleShape = fixture.facts.at("sample_shape").get<std::vector<std::int64_t>>();
    options.batchSize = fixture.facts.at("batch").get<std::int64_t>();
    fixture.graph = importOnnx(kModels + name + ".onnx", options);
    return fixture;
}

class TorchModel : public testing::TestWithParam<std::string> {};

TEST_P(TorchModel, ImportsWithEveryNodeSupportedAndEveryShapeStatic)
{
    const Fixture fixture = load(GetParam());
    const OnnxGraph& graph = fixture.graph;
    for (const OnnxNode* node : graph.unsupportedNodes())
        ADD_FAILURE() << "unsupported node " << node->name << " (" << node->opType << ")";
    for (const OnnxValue& value : graph.values) {
        EXPECT_TRUE(value.shapeKnown) << value.name;
        for (std::int64_t dim : value.shape)
            EXPECT_GE(dim, 0) << value.name;
    }
    EXPECT_EQ(graph.opsetVersion, fixture.facts.at("opset").get<std::int64_t>());
    EXPECT_EQ(graph.batchSize, fixture.facts.at("batch").get<std::int64_t>());
    ASSERT_EQ(graph.outputs.size(), 1u);
    const OnnxValue* logits = graph.value(graph.outputs.front());
    ASSERT_NE(logits, nullptr);
    EXPECT_EQ(logits->shape, fixture.facts.at("logits_shape").get<std::vector<std::int64_t>>());
    EXPECT_EQ(logits->type, ElementType::Float32);
}

TEST_P(TorchModel, ParametersAreExactlyTorchsParameters)
{
    const Fixture fixture = load(GetParam());
    const OnnxGraph& graph = fixture.graph;
    EXPECT_EQ(std::int64_t(graph.parameters.size()), fixture.facts.at("parameter_tensors").get<std::int64_t>());
    EXPECT_EQ(graph.parameterElementCount(), fixture.facts.at("parameter_elements").get<std::int64_t>());
    // The initializers make_fixtures.py matched to torch parameters are the parameters.
    const auto& mapping = fixture.facts.at("initializer_to_parameter");
    for (const auto& [initializer, parameter] : mapping.items())
        EXPECT_NE(graph.parameter(initializer), nullptr) << initializer << " holds torch's " << parameter;
    for (const OnnxTensor& parameter : graph.parameters) {
        EXPECT_TRUE(mapping.contains(parameter.name)) << parameter.name << " is no torch parameter";
        EXPECT_EQ(parameter.type, ElementType::Float32) << parameter.name;
        EXPECT_EQ(std::int64_t(parameter.floats.size()), parameter.elementCount()) << parameter.name;
    }
}

TEST_P(TorchModel, NoShapeArithmeticIsLeft)
{
    const OnnxGraph graph = load(GetParam()).graph;
    std::set<std::string> computed; // values a node computes from an input or a parameter
    for (const std::string& input : graph.inputs)
        computed.insert(input);
    for (const OnnxTensor& parameter : graph.parameters)
        computed.insert(parameter.name);
    for (const OnnxNode& node : graph.nodes) {
        EXPECT_NE(opHandling(node.domain, node.opType), OpHandling::FoldedOnly)
            << node.name << " (" << node.opType << ") was not folded";
        EXPECT_NE(node.opType, "Constant") << node.name;
        bool readsComputed = false;
        for (const std::string& input : node.inputs)
            readsComputed = readsComputed || computed.count(input) != 0;
        EXPECT_TRUE(readsComputed) << node.name << " (" << node.opType << ") computes on constants only";
        computed.insert(node.outputs.begin(), node.outputs.end());
    }
}

INSTANTIATE_TEST_SUITE_P(Exports, TorchModel,
                         testing::Values("mlp", "resnet18", "mobilenet_v2", "vit", "causal_transformer"));

// The MLP's FLOPs follow from its layer widths: 2 * inputs * outputs per Gemm.
TEST(TorchModelFlops, MlpIsTwiceItsMultiplyAdds)
{
    const OnnxGraph graph = load("mlp").graph;
    double expected = 0;
    for (const OnnxTensor& parameter : graph.parameters) {
        if (parameter.shape.size() == 2) // weights [out, in]
            expected += 2.0 * double(parameter.shape[0] * parameter.shape[1]);
    }
    EXPECT_EQ(expected, 2.0 * (192 * 64 + 64 * 32 + 32 * 10));
    EXPECT_EQ(graph.flopsPerSample(), expected);
}

// Batch-norm running statistics are state, not parameters; the dynamic-batch ViT folds its
// reshapes for the batch asked for.
TEST(TorchModelRoles, RunningStatisticsAreConstantsAndTheBatchIsTheOneAskedFor)
{
    const OnnxGraph resnet = load("resnet18").graph;
    ASSERT_NE(resnet.constant("bn1.running_mean"), nullptr);
    ASSERT_NE(resnet.constant("bn1.running_var"), nullptr);
    EXPECT_NE(resnet.parameter("bn1.weight"), nullptr);

    ImportOptions options;
    options.sampleShape = std::vector<std::int64_t>{3, 32, 32};
    options.batchSize = 3;
    const OnnxGraph vit = importOnnx(kModels + "vit.onnx", options);
    EXPECT_EQ(vit.batchSize, 3);
    EXPECT_EQ(vit.value(vit.outputs.front())->shape, (std::vector<std::int64_t>{3, 10}));
    EXPECT_TRUE(vit.unsupportedNodes().empty());
    // The class token is a parameter broadcast over the batch.
    ASSERT_NE(vit.parameter("class_token"), nullptr);
}

// One initializer feeding two ops (tied embedding and output head) is one parameter.
TEST(TorchModelRoles, TiedWeightsAreOneParameter)
{
    const OnnxGraph graph = load("causal_transformer").graph;
    int uses = 0;
    for (const OnnxNode& node : graph.nodes) {
        for (const std::string& input : node.inputs)
            uses += input == "tokens.weight";
    }
    EXPECT_EQ(uses, 2);
    EXPECT_NE(graph.parameter("tokens.weight"), nullptr);
}

// The causal mask the model builds from the sequence length (Range, Greater, Where on
// ConstantOfShape, ...) folds to -inf above the diagonal and 0 on and below it, the values
// torch's attention adds to its scores.
TEST(TorchModelFolding, TheCausalMaskFoldsToItsValues)
{
    const OnnxGraph graph = load("causal_transformer").graph;
    int masks = 0;
    for (const OnnxNode& node : graph.nodes) {
        if (node.opType != "Add" || node.name.find("self_attn") == std::string::npos)
            continue;
        for (const std::string& input : node.inputs) {
            const OnnxTensor* mask = graph.constant(input);
            if (!mask || mask->elementCount() != 16 * 16)
                continue;
            ++masks;
            for (std::int64_t row = 0; row < 16; ++row) {
                for (std::int64_t column = 0; column < 16; ++column) {
                    const float value = mask->floats[std::size_t(row * 16 + column)];
                    if (column > row)
                        EXPECT_TRUE(std::isinf(value) && value < 0) << row << "," << column << ": " << value;
                    else
                        EXPECT_EQ(value, 0.0f) << row << "," << column;
                }
            }
        }
    }
    EXPECT_EQ(masks, 2); // one per layer
}

} // namespace
} // namespace mantissa::onnx_import
