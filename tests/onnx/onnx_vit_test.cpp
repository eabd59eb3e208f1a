// torchvision's VisionTransformer of make_fixtures.py (patch convolution, class token, learned
// positions, two encoder blocks of nn.MultiheadAttention and a GELU MLP, a linear head),
// compiled from its ONNX file as a run compiles it: every node, its dropouts (p = 0) included.
// fp32 logits, loss and every parameter's gradient match PyTorch's; it trains in fp32,
// mixed-bf16 and MXFP8.
#include "engine/onnx/compile_onnx.h"
#include "engine/onnx/import_onnx.h"
#include "engine/onnx/tensor_proto_file.h"
#include "engine/util/check.h"

#include "torch_fixtures.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>

namespace mantissa::onnx_import {
namespace {

OnnxTensor reference(const std::string& key) { return fixtures::reference("vit", key); }

struct Batch {
    Tensor images, labels;
};

Batch referenceBatch()
{
    const OnnxTensor input = reference("input");
    const OnnxTensor labels = reference("labels");
    return {Tensor::fromFloats(Shape(input.shape), input.floats),
            Tensor::fromFloats({static_cast<std::int64_t>(labels.ints.size())},
                               std::vector<float>(labels.ints.begin(), labels.ints.end()))};
}

// Measured on this CPU backend: logits 3.6e-7 of their largest element, loss 1.7e-7, gradients
// up to 1.06e-6. The same ops as the causal transformer's (onnx_transformer_test.cpp), summed in
// other orders than torch's and with other polynomials for erf, exp and the inverse square root,
// plus the patch convolution's blocked sums; the bounds are about twice the largest measured.
constexpr double kForwardTolerance = 8e-7;
constexpr double kGradientTolerance = 2.2e-6;

TEST(OnnxVit, MatchesPyTorchsLogitsLossAndGradients)
{
    const OnnxGraph onnx = fixtures::importFixture("vit");
    auto backend = makeCpuBackend(1);
    const CompiledOnnx compiled = compileOnnx(onnx, PrecisionPolicy(PrecisionMode::Fp32), *backend);
    const Batch batch = referenceBatch();
    PassState pass{*backend};
    GraphForward forward = compiled.graph->forward(pass, batch.images);
    const double logitsError = fixtures::relativeError(forward.output.toFloats(), reference("logits").floats);
    EXPECT_LE(logitsError, kForwardTolerance);
    Tensor dlogits = backend->empty(forward.output.shape(), DType::F32);
    const LossResult loss = backend->softmaxCrossEntropy(forward.output, batch.labels, 1.0f, &dlogits);
    const double lossError = fixtures::relativeError({loss.meanLoss}, reference("loss").floats);
    EXPECT_LE(lossError, kForwardTolerance);
    compiled.graph->backward(pass, dlogits, forward, false);
    const std::vector<Parameter*> parameters = compiled.graph->parametersInBackwardOrder();
    EXPECT_EQ(parameters.size(), onnx.parameters.size());
    double worst = 0;
    for (const Parameter* p : parameters) {
        const double error = fixtures::relativeError(p->fp32Grad.toFloats(), reference("grad/" + p->name).floats);
        EXPECT_LE(error, kGradientTolerance) << p->name;
        worst = std::max(worst, error);
    }
    std::cout << "  logits: " << logitsError << ", loss: " << lossError << ", largest gradient error: " << worst
              << "\n";
}

class CompiledVitTrains : public testing::TestWithParam<PrecisionMode> {};

// Plain SGD on PyTorch's reference batch, as onnx_transformer_test does.
TEST_P(CompiledVitTrains, LossFallsOverTwentySgdSteps)
{
    const OnnxGraph onnx = fixtures::importFixture("vit");
    auto backend = makeCpuBackend(1);
    const PrecisionPolicy policy(GetParam());
    const CompiledOnnx compiled = compileOnnx(onnx, policy, *backend);
    if (policy.recipe() != GemmRecipe::None) {
        ASSERT_GT(compiled.coverage.quantisedCount(), 0u) << compiled.coverage.summary();
    }
    const Batch batch = referenceBatch();
    const std::vector<float> losses =
        fixtures::sgdLosses(compiled, *backend, batch.images, fixtures::crossEntropy(batch.labels), 20, 0.1f);
    std::cout << "  loss " << losses.front() << " -> " << losses.back() << "\n";
    for (float loss : losses)
        ASSERT_TRUE(std::isfinite(loss));
    EXPECT_LT(losses.back(), 0.5f * losses.front());
}

INSTANTIATE_TEST_SUITE_P(Modes, CompiledVitTrains,
                         testing::Values(PrecisionMode::Fp32, PrecisionMode::MixedBf16, PrecisionMode::Mxfp8),
                         fixtures::modeTestName);

} // namespace
} // namespace mantissa::onnx_import
