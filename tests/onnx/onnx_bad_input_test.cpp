// Each kind of bad ONNX input gets an OnnxImportError naming the file and the problem; the
// small good models (external data, a loss in the graph, convolutions) import as they should.
#include "engine/onnx/import_onnx.h"
#include "engine/onnx/onnx_import_error.h"
#include "engine/onnx/op_support.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <typeinfo>

namespace mantissa::onnx_import {
namespace {

namespace fs = std::filesystem;

const std::string kSmall = std::string(MANTISSA_ONNX_MODELS) + "/small/";
const std::string kTorch = std::string(MANTISSA_ONNX_MODELS) + "/torch/";

// The message of the OnnxImportError that importing `path` throws ("" when none is thrown).
std::string importError(const std::string& path, const ImportOptions& options = {})
{
    try {
        importOnnx(path, options);
    } catch (const OnnxImportError& error) {
        return error.what();
    }
    return {};
}

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

// A copy of the first `bytes` bytes of `from`, in the test's temporary folder.
std::string truncatedCopy(const std::string& from, std::uintmax_t bytes)
{
    const std::string to = (fs::temp_directory_path() / ("onnx_truncated_" + std::to_string(bytes) + ".onnx")).string();
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
    fs::resize_file(to, bytes);
    return to;
}

TEST(OnnxBadInput, NotAnOnnxFile)
{
    const std::string message = importError(kSmall + "not_onnx.onnx");
    EXPECT_HAS(message, kSmall + "not_onnx.onnx");
    EXPECT_HAS(message, "not an ONNX model");
    EXPECT_HAS(importError(kSmall + "no_such_file.onnx"), "no such file");
    EXPECT_HAS(importError(kSmall), "not a file");
}

TEST(OnnxBadInput, TruncatedFiles)
{
    const std::string model = kTorch + "resnet18.onnx";
    const std::uintmax_t size = fs::file_size(model);
    for (const std::uintmax_t bytes : {std::uintmax_t(0), std::uintmax_t(7), size / 3, size - 1}) {
        const std::string path = truncatedCopy(model, bytes);
        const std::string message = importError(path);
        EXPECT_HAS(message, path);
        EXPECT_HAS(message, "truncated");
        fs::remove(path);
    }
}

TEST(OnnxBadInput, OpsetNewerThan17)
{
    const std::string message = importError(kSmall + "opset18.onnx");
    EXPECT_HAS(message, kSmall + "opset18.onnx");
    EXPECT_HAS(message, "opset 18 is newer than 17");
}

TEST(OnnxBadInput, MissingExternalData)
{
    const std::string message = importError(kSmall + "external_missing.onnx");
    EXPECT_HAS(message, "initializer 'w'");
    EXPECT_HAS(message, "external_missing.weights', which is missing");
}

TEST(OnnxBadInput, ExternalDataOutsideTheModelsFolder)
{
    const std::string message = importError(kSmall + "external_outside.onnx");
    EXPECT_HAS(message, "names the external file '../small/external.weights', outside the model's folder");
}

TEST(OnnxBadInput, ExternalDataIsLoaded)
{
    const OnnxGraph external = importOnnx(kSmall + "external.onnx");
    const OnnxGraph inline_ = importOnnx(kSmall + "fixed.onnx");
    ASSERT_NE(external.parameter("w"), nullptr);
    EXPECT_EQ(external.parameter("w")->floats, inline_.parameter("w")->floats);
    EXPECT_EQ(external.parameter("b")->floats, inline_.parameter("b")->floats);
}

TEST(OnnxBadInput, UnsupportedOperatorsAreAllListedWithTheSupportedOnes)
{
    const OnnxGraph graph = importOnnx(kSmall + "unsupported.onnx"); // inspect lists them: no throw here
    const auto unsupported = graph.unsupportedNodes();
    ASSERT_EQ(unsupported.size(), 2u);
    EXPECT_EQ(unsupported[0]->name, "selu_node");
    EXPECT_EQ(unsupported[0]->opType, "Selu");
    EXPECT_EQ(unsupported[1]->name, "softplus_node");
    EXPECT_EQ(unsupported[1]->opType, "Softplus");
    std::string message;
    try {
        requireSupported(graph);
    } catch (const OnnxImportError& error) {
        message = error.what();
    }
    EXPECT_HAS(message, kSmall + "unsupported.onnx: 2 nodes with an unsupported operator");
    EXPECT_HAS(message, "node 'selu_node': Selu");
    EXPECT_HAS(message, "node 'softplus_node': Softplus");
    EXPECT_HAS(message, "supported operators: " + supportedOpsText());
    EXPECT_NO_THROW(requireSupported(importOnnx(kSmall + "fixed.onnx")));
}

TEST(OnnxBadInput, DynamicDimensionsNeedAnInputShape)
{
    const std::string message = importError(kSmall + "dynamic.onnx");
    EXPECT_HAS(message, "input 'input' has shape [batch, features]");
    EXPECT_HAS(message, "dimension 1 (features) is dynamic");
    EXPECT_HAS(message, "--input-shape");

    ImportOptions options;
    options.sampleShape = std::vector<std::int64_t>{8};
    options.batchSize = 5;
    const OnnxGraph graph = importOnnx(kSmall + "dynamic.onnx", options);
    EXPECT_EQ(graph.value("input")->shape, (std::vector<std::int64_t>{5, 8}));
    EXPECT_EQ(graph.value("output")->shape, (std::vector<std::int64_t>{5, 16}));
}

TEST(OnnxBadInput, InputShapeThatDoesNotFit)
{
    ImportOptions options;
    options.sampleShape = std::vector<std::int64_t>{9};
    // A dimension the file fixes differs.
    EXPECT_HAS(importError(kSmall + "fixed.onnx", options),
               "has shape [2, 8] (batch first), which does not fit the input shape 9");
    // A dynamic dimension the weights cannot take.
    const std::string mismatch = importError(kSmall + "dynamic.onnx", options);
    EXPECT_HAS(mismatch, "shape inference fails for the fixed input shape");
    EXPECT_HAS(mismatch, "matmul");
    // The wrong number of dimensions.
    options.sampleShape = std::vector<std::int64_t>{3, 8};
    EXPECT_HAS(importError(kSmall + "dynamic.onnx", options), "gives 2 dimensions per sample, it needs 1");
}

TEST(OnnxBadInput, NoFloatParameters)
{
    EXPECT_HAS(importError(kSmall + "no_parameters.onnx"), "no float parameters");
    ImportOptions options;
    options.requireParameters = false;
    EXPECT_EQ(importError(kSmall + "no_parameters.onnx", options), "");
}

TEST(OnnxBadInput, NanAndInfInInitializersNameTheInitializer)
{
    EXPECT_HAS(importError(kSmall + "nan.onnx"), "initializer 'w' holds NaN at index 5 of its 128 values");
    EXPECT_HAS(importError(kSmall + "inf.onnx"), "initializer 'w' holds +Inf at index 17 of its 128 values");
}

TEST(OnnxBadInput, TooLargeForMemory)
{
    ImportOptions options;
    options.sampleShape = std::vector<std::int64_t>{3, 32, 32};
    options.memoryBudgetBytes = 100u << 20; // ResNet-18's 11.2 M parameters need 179 MB of training state
    const std::string message = importError(kTorch + "resnet18.onnx", options);
    EXPECT_HAS(message, "too large: 11181642 parameters need");
    options.memoryBudgetBytes = 1u << 20; // smaller than the file itself
    EXPECT_HAS(importError(kTorch + "resnet18.onnx", options), "too large:");
}

TEST(OnnxBadInput, ShapeText)
{
    EXPECT_EQ(parseShapeText("3x32x32"), (std::vector<std::int64_t>{3, 32, 32}));
    EXPECT_EQ(parseShapeText("128"), (std::vector<std::int64_t>{128}));
    for (const char* bad : {"", "x", "3x", "3xx2", "3x-1", "0x3", "3*32", "3x32x32 ", "a"})
        EXPECT_THROW(parseShapeText(bad), OnnxImportError) << bad;
    EXPECT_EQ(shapeText({3, 32, 32}), "3x32x32");
}

TEST(OnnxGoodInput, TheGraphsOwnLossIsFound)
{
    ImportOptions options;
    options.batchSize = 6;
    const OnnxGraph graph = importOnnx(kSmall + "with_loss.onnx", options);
    ASSERT_TRUE(graph.lossNode.has_value());
    EXPECT_EQ(graph.nodes[*graph.lossNode].name, "loss");
    EXPECT_EQ(graph.inputs, (std::vector<std::string>{"input", "labels"}));
    EXPECT_EQ(graph.value("labels")->shape, (std::vector<std::int64_t>{6}));
    EXPECT_EQ(graph.value("loss")->shape, (std::vector<std::int64_t>{}));
    EXPECT_FALSE(importOnnx(kSmall + "fixed.onnx").lossNode.has_value());
}

TEST(OnnxGoodInput, AOneValueBiasTrainsARankZeroEpsilonDoesNot)
{
    const OnnxGraph graph = importOnnx(kSmall + "regression.onnx");
    EXPECT_NE(graph.parameter("w"), nullptr);
    ASSERT_NE(graph.parameter("b"), nullptr);
    EXPECT_EQ(graph.parameter("b")->shape, (std::vector<std::int64_t>{1}));
    ASSERT_NE(graph.constant("epsilon"), nullptr);
    EXPECT_EQ(graph.constant("epsilon")->floats, (std::vector<float>{1e-5f}));
    EXPECT_EQ(graph.parameters.size(), 2u);
}

TEST(OnnxGoodInput, ConvolutionFlopsPerSample)
{
    const OnnxGraph graph = importOnnx(kSmall + "convs.onnx");
    ASSERT_EQ(graph.nodes.size(), 2u);
    // Conv: 6 output channels of 4x4, each from 2 input channels (group 2) times 3x3 taps.
    EXPECT_EQ(graph.value("conv")->shape, (std::vector<std::int64_t>{2, 6, 4, 4}));
    EXPECT_EQ(graph.nodes[0].flopsPerSample, 2.0 * (6 * 4 * 4) * (2 * 3 * 3));
    // ConvTranspose: each of the 6x4x4 inputs spreads over 5 output channels times 2x2 taps.
    EXPECT_EQ(graph.nodes[1].flopsPerSample, 2.0 * (6 * 4 * 4) * (5 * 2 * 2));
    EXPECT_EQ(graph.parameterElementCount(), 6 * 2 * 3 * 3 + 6 + 6 * 5 * 2 * 2);
}

// Corrupted files (random bytes overwritten in a transformer with shape arithmetic) either
// import or fail with an OnnxImportError: never another exception, never a crash.
TEST(OnnxBadInput, CorruptedBytesNeverCrash)
{
    const std::string model = kTorch + "vit.onnx";
    std::ifstream in(model, std::ios::binary);
    const std::string original((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_GT(original.size(), 1000u);
    const std::string path = (fs::temp_directory_path() / "onnx_corrupted.onnx").string();
    std::mt19937_64 random(20261129);
    int imported = 0, refused = 0;
    for (int round = 0; round < 200; ++round) {
        std::string bytes = original;
        // Mostly in the graph's structure (the first part of the file, before the weights).
        const std::size_t span = round % 2 ? bytes.size() : std::min<std::size_t>(bytes.size(), 60000);
        for (int flip = 0; flip < 1 + round % 4; ++flip)
            bytes[random() % span] = char(random());
        std::ofstream(path, std::ios::binary) << bytes;
        ImportOptions options;
        options.sampleShape = std::vector<std::int64_t>{3, 32, 32};
        try {
            importOnnx(path, options);
            ++imported;
        } catch (const OnnxImportError&) {
            ++refused;
        } catch (const std::exception& other) {
            ADD_FAILURE() << "round " << round << ": " << typeid(other).name() << ": " << other.what();
        }
    }
    fs::remove(path);
    EXPECT_EQ(imported + refused, 200);
    EXPECT_GT(refused, 0);
}

} // namespace
} // namespace mantissa::onnx_import
