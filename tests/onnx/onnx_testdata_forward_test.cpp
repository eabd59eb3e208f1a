// ONNX's own backend test data (Debian's libonnx-testdata) as the reference for the compiled
// graph's forward: every node test that imports and compiles into the engine (compile_onnx.h)
// runs its test_data_set_0 input in fp32 on the CPU backend and must give ONNX's expected output.
// The counts of passing, failing and not (yet) compiled tests are printed.
#include "engine/onnx/compile_onnx.h"
#include "engine/onnx/import_onnx.h"
#include "engine/onnx/node_compilers.h"
#include "engine/onnx/onnx_import_error.h"
#include "engine/onnx/tensor_proto_file.h"
#include "engine/util/check.h"
#include "node_test_data.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <gtest/gtest.h>
#include <set>
#include <unistd.h>

namespace mantissa::onnx_import {
namespace {

namespace fs = std::filesystem;

const fs::path kNodeTests = fs::path(MANTISSA_ONNX_TESTDATA) / "node";

// Measured: the largest difference of any compiled test is 1.2e-7 (one ulp of a value near 1):
// ONNX's expected outputs are numpy's, whose tanh and exp may round differently from the
// engine's by an ulp. Twice that.
constexpr double kTolerance = 2.4e-7;

// The largest |actual - expected| over max(1, |expected|): relative for large values, absolute
// near zero, where a relative error means nothing.
double difference(const std::vector<float>& actual, const std::vector<float>& expected)
{
    double worst = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const double e = expected[i];
        worst = std::max(worst, std::abs(actual[i] - e) / std::max(1.0, std::abs(e)));
    }
    return worst;
}

// Whether a Dropout of the graph drops at random: in training mode with a ratio above 0, its
// expected output carries numpy's mask, which no other implementation draws.
bool dropsAtRandom(const OnnxGraph& onnx)
{
    const auto scalar = [&](const OnnxNode& node, std::size_t input, float fallback) {
        const OnnxTensor* value = input < node.inputs.size() ? onnx.constant(node.inputs[input]) : nullptr;
        if (!value)
            return fallback;
        return value->floats.empty() ? static_cast<float>(value->ints.at(0)) : value->floats.at(0);
    };
    return std::any_of(onnx.nodes.begin(), onnx.nodes.end(), [&](const OnnxNode& node) {
        return node.opType == "Dropout" && scalar(node, 2, 0.0f) != 0.0f && scalar(node, 1, 0.5f) != 0.0f;
    });
}

// Whether the test's node computes in training mode (a BatchNormalization with training_mode =
// 1, whose output normalises with the batch's statistics): the forward then runs as in training.
bool trainingMode(const OnnxGraph& onnx)
{
    return std::any_of(onnx.nodes.begin(), onnx.nodes.end(),
                       [](const OnnxNode& node) { return node.intAttribute("training_mode", 0) != 0; });
}

// Whether every node of the test broadcasts elementwise (numpy's rules), so that its data runs as
// one sample: a leading axis of 1 changes nothing there, and keeps its other operands, which span
// the data's first axis, off the batch's.
bool broadcastsElementwise(const std::vector<std::string>& opTypes)
{
    static const std::set<std::string> ops{"Add", "Sub", "Mul", "Div", "Pow", "Where"};
    return !opTypes.empty() &&
           std::all_of(opTypes.begin(), opTypes.end(), [](const std::string& type) { return ops.count(type) != 0; });
}

// A folder for the rewritten models, removed when the test ends.
struct ScratchFolder {
    fs::path path = fs::path(testing::TempDir()) / ("onnx-node-tests-" + std::to_string(::getpid()));
    ScratchFolder() { fs::create_directories(path); }
    ~ScratchFolder() { fs::remove_all(path); }
};

// Each node test runs with its first float input as the data and its other inputs as
// initializers holding the test's values (node_test_data.h): a Conv's W and B, a batch norm's
// scale, bias and statistics, a Where's condition and y are what an exported model holds as
// initializers, and the engine's graph reads one data input. The broadcasting arithmetic's data
// is one sample.
TEST(OnnxTestDataForward, EveryCompiledNodeTestGivesTheExpectedOutput)
{
    if (!fs::is_directory(kNodeTests))
        GTEST_SKIP() << "no ONNX test data under " << kNodeTests << " (Debian package libonnx-testdata)";
    std::vector<fs::path> folders;
    for (const auto& entry : fs::directory_iterator(kNodeTests))
        if (fs::exists(entry.path() / "model.onnx") && fs::exists(entry.path() / "test_data_set_0/input_0.pb"))
            folders.push_back(entry.path());
    std::sort(folders.begin(), folders.end());
    const ScratchFolder scratch;
    auto backend = makeCpuBackend(1);
    int failed = 0, notCompiled = 0, integerData = 0, random = 0;
    std::vector<std::string> passed;
    // Why the tests of operators that compile do not: a form or attribute the compiler refuses.
    std::vector<std::string> refusals;
    const auto refused = [&](const fs::path& folder, const std::string& why) {
        ++notCompiled;
        const std::vector<std::string> types = nodeTestOpTypes(folder / "model.onnx");
        if (!types.empty() && std::all_of(types.begin(), types.end(), [](const std::string& type) {
                return type == "Constant" || findNodeCompiler(type) != nullptr;
            }))
            refusals.push_back(folder.filename().string() + ": " + why);
    };
    double worst = 0;
    for (const fs::path& folder : folders) {
        const std::size_t data = nodeTestDataInput(nodeTestInputProtos(folder));
        const fs::path model = scratch.path / (folder.filename().string() + ".onnx");
        const bool oneSample = broadcastsElementwise(nodeTestOpTypes(folder / "model.onnx"));
        if (!writeNodeTestModel(folder, data, model, oneSample)) {
            refused(folder, "its inputs have no values");
            continue;
        }
        OnnxGraph onnx;
        ImportOptions options;
        options.requireParameters = false;
        try {
            onnx = importOnnx(model.string(), options);
            if (!onnx.unsupportedNodes().empty()) {
                refused(folder, "a node is unsupported");
                continue;
            }
        } catch (const OnnxImportError& e) {
            refused(folder, e.what());
            continue;
        }
        CompiledOnnx compiled;
        try {
            compiled = compileOnnx(onnx, PrecisionPolicy(PrecisionMode::Fp32), *backend);
        } catch (const ConfigError& e) {
            refused(folder, e.what());
            continue;
        }
        const OnnxTensor input =
            readTensorProtoFile((folder / "test_data_set_0" / ("input_" + std::to_string(data) + ".pb")).string());
        const OnnxTensor expected = readTensorProtoFile((folder / "test_data_set_0/output_0.pb").string());
        // The engine's data are floats: a test of integer data (a reshape of int64 values, a
        // uint8 max pool, an int8 clip) compiles but does not run here.
        if (!isFloatingPoint(input.type) || !isFloatingPoint(expected.type) ||
            input.floats.size() != static_cast<std::size_t>(input.elementCount()) ||
            expected.floats.size() != static_cast<std::size_t>(expected.elementCount())) {
            ++integerData;
            continue;
        }
        if (dropsAtRandom(onnx)) {
            ++random;
            continue;
        }
        PassState pass{*backend};
        pass.training = trainingMode(onnx);
        std::vector<std::int64_t> shape = input.shape;
        if (oneSample)
            shape.insert(shape.begin(), 1);
        const GraphForward forward = compiled.graph->forward(pass, Tensor::fromFloats(Shape(shape), input.floats));
        const std::vector<float> actual = forward.output.toFloats();
        const double error = actual.size() == expected.floats.size() ? difference(actual, expected.floats) : INFINITY;
        worst = std::max(worst, error);
        if (error <= kTolerance) {
            passed.push_back(folder.filename().string());
        } else {
            ++failed;
            ADD_FAILURE() << folder.filename().string() << ": differs from ONNX's expected output by " << error;
        }
    }
    std::printf("ONNX node tests run through the compiled graph (fp32 forward): %d pass, %d fail, %d do not compile "
                "(operators or forms the compiler does not take, several data inputs), %d compile but feed or "
                "expect integers, %d drop at random (Dropout in training mode); largest difference %g\n",
                static_cast<int>(passed.size()), failed, notCompiled, integerData, random, worst);
    for (const std::string& name : passed)
        std::printf("  pass: %s\n", name.c_str());
    std::printf("%zu of those that do not compile are of operators that do, in a form they do not take:\n",
                refusals.size());
    for (const std::string& refusal : refusals)
        std::printf("  %s\n", refusal.c_str());
    EXPECT_FALSE(passed.empty());
}

// ONNX's training-mode batch norm also outputs the running statistics it moved: the mean as
// the engine moves it, the variance by the batch's biased variance, where the engine (as PyTorch,
// which exports these models) takes the unbiased one, n / (n - 1) times as large. So the engine's
// running variance is ONNX's with the batch's share scaled by n / (n - 1).
TEST(OnnxTestDataForward, TrainingModeBatchNormMovesTheRunningStatisticsAsPyTorch)
{
    if (!fs::is_directory(kNodeTests))
        GTEST_SKIP() << "no ONNX test data under " << kNodeTests << " (Debian package libonnx-testdata)";
    const ScratchFolder scratch;
    auto backend = makeCpuBackend(1);
    int checked = 0;
    for (const char* name : {"test_batchnorm_example_training_mode", "test_batchnorm_epsilon_training_mode"}) {
        const fs::path folder = kNodeTests / name;
        const fs::path model = scratch.path / (std::string(name) + ".onnx");
        ASSERT_TRUE(writeNodeTestModel(folder, 0, model));
        ImportOptions options;
        options.requireParameters = false;
        const OnnxGraph onnx = importOnnx(model.string(), options);
        const CompiledOnnx compiled = compileOnnx(onnx, PrecisionPolicy(PrecisionMode::Fp32), *backend);
        const auto read = [&](const std::string& file) {
            return readTensorProtoFile((folder / "test_data_set_0" / file).string());
        };
        const OnnxTensor x = read("input_0.pb");
        const std::vector<float> var0 = read("input_4.pb").floats;
        PassState pass{*backend};
        compiled.graph->forward(pass, Tensor::fromFloats(Shape(x.shape), x.floats));
        const auto buffers = compiled.graph->buffers();
        ASSERT_EQ(buffers.size(), 2u);
        const std::vector<float> mean = buffers[0].second->toFloats(), var = buffers[1].second->toFloats();
        const std::vector<float> onnxMean = read("output_1.pb").floats, onnxVar = read("output_2.pb").floats;
        const float momentum = onnx.nodes.front().floatAttribute("momentum", 0.9f);
        const double n = static_cast<double>(x.elementCount() / x.shape.at(1)); // values per channel
        std::vector<float> expectedVar(onnxVar.size());
        for (std::size_t c = 0; c < onnxVar.size(); ++c) {
            const double biasedShare = onnxVar[c] - momentum * static_cast<double>(var0[c]);
            expectedVar[c] = static_cast<float>(momentum * static_cast<double>(var0[c]) + biasedShare * n / (n - 1));
        }
        EXPECT_LE(difference(mean, onnxMean), kTolerance) << name;
        EXPECT_LE(difference(var, expectedVar), kTolerance) << name;
        // And not ONNX's own: the conventions differ by more than rounding here.
        EXPECT_GT(difference(var, onnxVar), 100 * kTolerance) << name;
        ++checked;
    }
    EXPECT_EQ(checked, 2);
}

} // namespace
} // namespace mantissa::onnx_import
