// ONNX's own backend test data (Debian's libonnx-testdata): every single-operator model whose
// operators are all supported imports; the constant folding reproduces ONNX's expected outputs
// for the models it can fold whole. Forward execution of the imported graphs is the graph
// engine's to check; this test says so in its output rather than claiming it.
#include "engine/onnx/import_onnx.h"
#include "engine/onnx/onnx_import_error.h"
#include "engine/onnx/op_support.h"
#include "engine/onnx/tensor_proto_file.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace mantissa::onnx_import {
namespace {

namespace fs = std::filesystem;

const fs::path kNodeTests = fs::path(MANTISSA_ONNX_TESTDATA) / "node";

std::vector<fs::path> nodeTestFolders()
{
    std::vector<fs::path> folders;
    if (fs::is_directory(kNodeTests)) {
        for (const auto& entry : fs::directory_iterator(kNodeTests)) {
            if (fs::exists(entry.path() / "model.onnx"))
                folders.push_back(entry.path());
        }
    }
    std::sort(folders.begin(), folders.end());
    return folders;
}

onnx::ModelProto readModel(const fs::path& path)
{
    std::ifstream file(path, std::ios::binary);
    onnx::ModelProto model;
    if (!model.ParseFromIstream(&file))
        throw std::runtime_error("cannot parse " + path.string());
    return model;
}

// Every operator one the graph engine runs, every input and output a tensor.
bool allOpsComputable(const onnx::ModelProto& model)
{
    for (const auto& node : model.graph().node()) {
        if (!isSupportedOp(node.domain(), node.op_type()))
            return false;
    }
    for (const auto* values : {&model.graph().input(), &model.graph().output()}) {
        for (const auto& value : *values) {
            if (!value.type().has_tensor_type())
                return false;
        }
    }
    return true;
}

// The values test_data_set_0 gives the graph inputs, named after them; only the integer ones
// when `integersOnly` (shapes, axes, starts: what a model fixes rather than feeds).
std::vector<OnnxTensor> dataSetInputs(const onnx::ModelProto& model, const fs::path& folder, bool integersOnly)
{
    std::vector<OnnxTensor> values;
    for (int k = 0; k < model.graph().input_size(); ++k) {
        const fs::path file = folder / "test_data_set_0" / ("input_" + std::to_string(k) + ".pb");
        if (!fs::exists(file))
            break;
        OnnxTensor value = readTensorProtoFile(file.string());
        value.name = model.graph().input(k).name();
        if (!integersOnly || (value.type == ElementType::Int64 || value.type == ElementType::Int32))
            values.push_back(std::move(value));
    }
    return values;
}

ImportOptions withoutParameters()
{
    ImportOptions options;
    options.requireParameters = false;
    return options;
}

TEST(OnnxTestData, EveryModelOfSupportedOperatorsImports)
{
    const std::vector<fs::path> folders = nodeTestFolders();
    if (folders.empty())
        GTEST_SKIP() << "no ONNX test data under " << kNodeTests << " (Debian package libonnx-testdata)";
    int imported = 0, importedWithFixedInputs = 0, unsupported = 0, refused = 0;
    std::vector<std::string> failures;
    for (const fs::path& folder : folders) {
        const onnx::ModelProto model = readModel(folder / "model.onnx");
        const bool computable = allOpsComputable(model);
        const std::string path = (folder / "model.onnx").string();
        try {
            const OnnxGraph graph = importOnnx(path, withoutParameters());
            if (graph.unsupportedNodes().empty())
                ++imported;
            else
                ++unsupported;
            continue;
        } catch (const OnnxImportError& error) {
            if (!computable) {
                ++refused;
                continue;
            }
            // A shape or axes the test feeds as an input: a static graph needs it fixed.
            ImportOptions options = withoutParameters();
            options.fixedInputs = dataSetInputs(model, folder, true);
            try {
                if (!options.fixedInputs.empty() && importOnnx(path, options).unsupportedNodes().empty()) {
                    ++importedWithFixedInputs;
                    continue;
                }
            } catch (const OnnxImportError&) {}
            failures.push_back(error.what());
        }
    }
    std::printf("ONNX node test models: %zu; imported with every node supported: %d, of them %d once their "
                "integer inputs (shapes, axes) are fixed; imported with unsupported nodes: %d; refused "
                "(unsupported operators or non-tensor values): %d; failed although every operator is supported: "
                "%zu.\nForward execution of these models is not checked here: that comes with the graph engine.\n",
                folders.size(), imported + importedWithFixedInputs, importedWithFixedInputs, unsupported, refused,
                failures.size());
    for (const std::string& failure : failures)
        ADD_FAILURE() << failure;
    EXPECT_GT(imported, 100); // the supported operators have well over a hundred node tests
}

// Exact: the folding computes float32 arithmetic in double and rounds once, which gives
// numpy's float32 results for every model folded here (one ulp of slack was never needed).
bool closeEnough(float expected, float actual)
{
    if (std::isnan(expected) || std::isnan(actual))
        return std::isnan(expected) && std::isnan(actual);
    return expected == actual;
}

TEST(OnnxTestData, FoldingReproducesTheExpectedOutputs)
{
    const std::vector<fs::path> folders = nodeTestFolders();
    if (folders.empty())
        GTEST_SKIP() << "no ONNX test data under " << kNodeTests;
    int matched = 0, notFolded = 0;
    std::vector<std::string> failures;
    for (const fs::path& folder : folders) {
        const fs::path dataSet = folder / "test_data_set_0";
        const onnx::ModelProto model = readModel(folder / "model.onnx");
        if (!fs::exists(dataSet / "output_0.pb") || model.graph().input_size() == 0)
            continue;
        ImportOptions options = withoutParameters();
        OnnxGraph graph;
        try {
            options.fixedInputs = dataSetInputs(model, folder, false);
            graph = importOnnx((folder / "model.onnx").string(), options);
        } catch (const OnnxImportError&) {
            ++notFolded; // e.g. an operator checked on its inputs' dynamic shapes
            continue;
        }
        if (!graph.nodes.empty()) {
            ++notFolded;
            continue;
        }
        std::string problem;
        for (std::size_t k = 0; k < graph.outputs.size() && problem.empty(); ++k) {
            const OnnxTensor expected =
                readTensorProtoFile((dataSet / ("output_" + std::to_string(k) + ".pb")).string());
            const OnnxTensor* actual = graph.constant(graph.outputs[k]);
            if (!actual) {
                problem = "output " + graph.outputs[k] + " is no constant";
            } else if (actual->shape != expected.shape || actual->type != expected.type) {
                problem = "output " + graph.outputs[k] + " has shape " + shapeText(actual->shape) + " " +
                          elementTypeName(actual->type) + ", expected " + shapeText(expected.shape) + " " +
                          elementTypeName(expected.type);
            } else if (actual->ints != expected.ints) {
                problem = "output " + graph.outputs[k] + " differs";
            } else {
                for (std::size_t i = 0; i < expected.floats.size() && problem.empty(); ++i) {
                    if (!closeEnough(expected.floats[i], actual->floats[i]))
                        problem = "output " + graph.outputs[k] + " value " + std::to_string(i) + " is " +
                                  std::to_string(actual->floats[i]) + ", expected " +
                                  std::to_string(expected.floats[i]);
                }
            }
        }
        if (problem.empty())
            ++matched;
        else
            failures.push_back(folder.filename().string() + ": " + problem);
    }
    std::printf("ONNX node tests folded whole with their test_data_set_0 inputs as constants: %d match the expected "
                "outputs, %zu do not; %d not folded (operators the import runs rather than folds).\n",
                matched, failures.size(), notFolded);
    for (const std::string& failure : failures)
        ADD_FAILURE() << failure;
    EXPECT_GT(matched, 100);
}

// Equal on graph inputs cannot fold: it is listed as unsupported, saying why.
TEST(OnnxTestData, FoldedOnlyOperatorsOnDataAreUnsupported)
{
    const fs::path model = kNodeTests / "test_equal" / "model.onnx";
    if (!fs::exists(model))
        GTEST_SKIP() << "no " << model;
    const OnnxGraph graph = importOnnx(model.string(), withoutParameters());
    ASSERT_EQ(graph.unsupportedNodes().size(), 1u);
    try {
        requireSupported(graph);
        ADD_FAILURE() << "no error";
    } catch (const OnnxImportError& error) {
        EXPECT_NE(std::string(error.what())
                      .find(": Equal (on values that are not constant for the fixed input shape; "
                            "it is only folded)"),
                  std::string::npos)
            << error.what();
    }
}

TEST(OnnxTestData, TensorProtoFilesAreRead)
{
    const fs::path folder = kNodeTests / "test_gather_0";
    if (!fs::exists(folder))
        GTEST_SKIP() << "no " << folder;
    const OnnxTensor data = readTensorProtoFile((folder / "test_data_set_0" / "input_0.pb").string());
    const OnnxTensor indices = readTensorProtoFile((folder / "test_data_set_0" / "input_1.pb").string());
    EXPECT_EQ(data.type, ElementType::Float32);
    EXPECT_EQ(data.shape, (std::vector<std::int64_t>{5, 4, 3, 2}));
    EXPECT_EQ(std::int64_t(data.floats.size()), data.elementCount());
    EXPECT_EQ(indices.type, ElementType::Int64);
    EXPECT_EQ(indices.ints, (std::vector<std::int64_t>{0, 1, 3}));
    EXPECT_THROW(readTensorProtoFile((folder / "model.onnx").string() + ".missing"), OnnxImportError);
}

} // namespace
} // namespace mantissa::onnx_import
