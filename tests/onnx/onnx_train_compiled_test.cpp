// A compiled ONNX graph trains in every kind of precision mode: the MLP fixture's graph, compiled
// under fp32, mixed-bf16 and MXFP8 (whose recipe quantises the GEMMs keep_first_last leaves), takes
// plain SGD steps on PyTorch's reference batch and its loss falls. The steps are written here
// (gradient from the working-type grad, update of the fp32 master, working copy rounded from it),
// so that what is tested is the compiled graph under each policy, not the trainer.
#include "engine/onnx/compile_onnx.h"
#include "engine/onnx/import_onnx.h"
#include "engine/onnx/tensor_proto_file.h"

#include "torch_fixtures.h"

#include <gtest/gtest.h>

#include <cmath>

namespace mantissa::onnx_import {
namespace {

using fixtures::kModels;

class CompiledMlpTrains : public testing::TestWithParam<PrecisionMode> {};

TEST_P(CompiledMlpTrains, LossFallsOverTwentySgdSteps)
{
    ImportOptions options;
    options.sampleShape = std::vector<std::int64_t>{3, 8, 8};
    options.batchSize = 4;
    const OnnxGraph onnx = importOnnx(kModels + "mlp.onnx", options);
    auto backend = makeCpuBackend(1);
    const PrecisionPolicy policy(GetParam());
    const CompiledOnnx compiled = compileOnnx(onnx, policy, *backend);
    // A recipe that quantised no GEMM would be mixed-bf16 by another name.
    if (policy.recipe() != GemmRecipe::None) {
        ASSERT_GT(compiled.coverage.quantisedCount(), 0u) << compiled.coverage.summary();
    }

    const OnnxTensor input = readTensorProtoFile(kModels + "mlp.reference/input.pb");
    const OnnxTensor labels = readTensorProtoFile(kModels + "mlp.reference/labels.pb");
    const Tensor x = Tensor::fromFloats({4, 3, 8, 8}, input.floats);
    const Tensor y = Tensor::fromFloats({4}, std::vector<float>(labels.ints.begin(), labels.ints.end()));
    const std::vector<float> losses = fixtures::sgdLosses(compiled, *backend, x, fixtures::crossEntropy(y), 20, 0.05f);
    std::cout << "  loss " << losses.front() << " -> " << losses.back() << "\n";
    for (float loss : losses)
        ASSERT_TRUE(std::isfinite(loss));
    // One batch seen twenty times: a working model fits it, well below where it started.
    EXPECT_LT(losses.back(), 0.5f * losses.front());
}

INSTANTIATE_TEST_SUITE_P(Modes, CompiledMlpTrains,
                         testing::Values(PrecisionMode::Fp32, PrecisionMode::MixedBf16, PrecisionMode::Mxfp8),
                         fixtures::modeTestName);

} // namespace
} // namespace mantissa::onnx_import
