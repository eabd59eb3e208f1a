// ONNX's own backend test data (Debian's libonnx-testdata) as the reference for the compiled
// graph's forward: every node test that imports and compiles into the engine (compile_onnx.h)
// runs its test_data_set_0 input in fp32 on the CPU backend and must give ONNX's expected output.
// The counts of passing, failing and not (yet) compiled tests are printed.
#include "engine/onnx/compile_onnx.h"
#include "engine/onnx/import_onnx.h"
#include "engine/onnx/onnx_import_error.h"
#include "engine/onnx/tensor_proto_file.h"
#include "engine/util/check.h"
#include "node_test_data.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <gtest/gtest.h>

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

TEST(OnnxTestDataForward, EveryCompiledNodeTestGivesTheExpectedOutput)
{
    if (!fs::is_directory(kNodeTests))
        GTEST_SKIP() << "no ONNX test data under " << kNodeTests << " (Debian package libonnx-testdata)";
    std::vector<fs::path> folders;
    for (const auto& entry : fs::directory_iterator(kNodeTests))
        if (fs::exists(entry.path() / "model.onnx") && fs::exists(entry.path() / "test_data_set_0/input_0.pb"))
            folders.push_back(entry.path());
    std::sort(folders.begin(), folders.end());
    auto backend = makeCpuBackend(1);
    int failed = 0, notCompiled = 0, integerData = 0;
    std::vector<std::string> passed;
    double worst = 0;
    for (const fs::path& folder : folders) {
        OnnxGraph onnx;
        ImportOptions options;
        options.requireParameters = false;
        try {
            // A reshape's target shape or an axis the test feeds as an input is fixed to the
            // test's value, as the import walk does: a static graph needs it constant.
            options.fixedInputs = nodeTestIntegerInputs(folder);
            onnx = importOnnx((folder / "model.onnx").string(), options);
            if (!onnx.unsupportedNodes().empty()) {
                ++notCompiled;
                continue;
            }
        } catch (const OnnxImportError&) {
            ++notCompiled;
            continue;
        }
        CompiledOnnx compiled;
        try {
            compiled = compileOnnx(onnx, PrecisionPolicy(PrecisionMode::Fp32), *backend);
        } catch (const ConfigError&) {
            ++notCompiled;
            continue;
        }
        const OnnxTensor input = readTensorProtoFile((folder / "test_data_set_0/input_0.pb").string());
        const OnnxTensor expected = readTensorProtoFile((folder / "test_data_set_0/output_0.pb").string());
        // The engine's data are floats: a test of integer data (a reshape of int64 values, a
        // uint8 max pool, an int8 clip) compiles but does not run here.
        if (!isFloatingPoint(input.type) || !isFloatingPoint(expected.type) ||
            input.floats.size() != static_cast<std::size_t>(input.elementCount()) ||
            expected.floats.size() != static_cast<std::size_t>(expected.elementCount())) {
            ++integerData;
            continue;
        }
        PassState pass{*backend};
        pass.training = false;
        const GraphForward forward =
            compiled.graph->forward(pass, Tensor::fromFloats(Shape(input.shape), input.floats));
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
                "yet (operators or forms the compiler does not take, several data inputs), %d compile but feed or "
                "expect integers; largest difference %g\n",
                static_cast<int>(passed.size()), failed, notCompiled, integerData, worst);
    for (const std::string& name : passed)
        std::printf("  pass: %s\n", name.c_str());
    EXPECT_FALSE(passed.empty());
}

} // namespace
} // namespace mantissa::onnx_import
