// torchvision's VisionTransformer of make_fixtures.py (patch convolution, class token, learned
// positions, two encoder blocks of nn.MultiheadAttention and a GELU MLP, a linear head),
// compiled from its ONNX file as a run compiles it: every node, its dropouts (p = 0) included.
// fp32 logits, loss and every parameter's gradient match PyTorch's; it trains in fp32,
// mixed-bf16 and MXFP8.
#include "engine/onnx/compile_onnx.h"
#include "engine/onnx/import_onnx.h"
#include "engine/onnx/tensor_proto_file.h"
#include "engine/util/check.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>

namespace mantissa::onnx_import {
namespace {

const std::string kModels = std::string(MANTISSA_ONNX_MODELS) + "/torch/";

OnnxTensor reference(const std::string& key) { return readTensorProtoFile(kModels + "vit.reference/" + key + ".pb"); }

OnnxGraph importVit()
{
    std::ifstream file(kModels + "vit.json");
    if (!file)
        throw std::runtime_error("no fixture " + kModels + "vit.json (onnx_make_fixtures makes it)");
    const nlohmann::json facts = nlohmann::json::parse(file);
    ImportOptions options;
    options.sampleShape = facts.at("sample_shape").get<std::vector<std::int64_t>>();
    options.batchSize = facts.at("batch").get<std::int64_t>();
    return importOnnx(kModels + "vit.onnx", options);
}

// The largest |a - b| relative to the largest |b|.
double relativeError(const std::vector<float>& actual, const std::vector<float>& expected)
{
    EXPECT_EQ(actual.size(), expected.size());
    double difference = 0, scale = 0;
    for (std::size_t i = 0; i < std::min(actual.size(), expected.size()); ++i) {
        difference = std::max(difference, std::abs(static_cast<double>(actual[i]) - expected[i]));
        scale = std::max(scale, std::abs(static_cast<double>(expected[i])));
    }
    return scale > 0 ? difference / scale : difference;
}

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
    const OnnxGraph onnx = importVit();
    auto backend = makeCpuBackend(1);
    const CompiledOnnx compiled = compileOnnx(onnx, PrecisionPolicy(PrecisionMode::Fp32), *backend);
    const Batch batch = referenceBatch();
    PassState pass{*backend};
    GraphForward forward = compiled.graph->forward(pass, batch.images);
    const double logitsError = relativeError(forward.output.toFloats(), reference("logits").floats);
    EXPECT_LE(logitsError, kForwardTolerance);
    Tensor dlogits = backend->empty(forward.output.shape(), DType::F32);
    const LossResult loss = backend->softmaxCrossEntropy(forward.output, batch.labels, 1.0f, &dlogits);
    const double lossError = relativeError({loss.meanLoss}, reference("loss").floats);
    EXPECT_LE(lossError, kForwardTolerance);
    compiled.graph->backward(pass, dlogits, forward, false);
    const std::vector<Parameter*> parameters = compiled.graph->parametersInBackwardOrder();
    EXPECT_EQ(parameters.size(), onnx.parameters.size());
    double worst = 0;
    for (const Parameter* p : parameters) {
        const double error = relativeError(p->fp32Grad.toFloats(), reference("grad/" + p->name).floats);
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
    const OnnxGraph onnx = importVit();
    auto backend = makeCpuBackend(1);
    const PrecisionPolicy policy(GetParam());
    const CompiledOnnx compiled = compileOnnx(onnx, policy, *backend);
    if (policy.recipe() != GemmRecipe::None) {
        ASSERT_GT(compiled.coverage.quantisedCount(), 0u) << compiled.coverage.summary();
    }
    const Batch batch = referenceBatch();
    const std::vector<Parameter*> parameters = compiled.graph->parametersInBackwardOrder();
    constexpr float kLearningRate = 0.1f;
    std::vector<float> losses;
    for (int step = 0; step < 20; ++step) {
        PassState pass{*backend};
        pass.step = static_cast<std::uint64_t>(step);
        GraphForward forward = compiled.graph->forward(pass, batch.images);
        Tensor dlogits = backend->empty(forward.output.shape(), forward.output.dtype());
        losses.push_back(backend->softmaxCrossEntropy(forward.output, batch.labels, 1.0f, &dlogits).meanLoss);
        compiled.graph->backward(pass, dlogits, forward, false);
        for (Parameter* p : parameters) {
            const std::vector<float> gradient = p->grad.toFloats();
            std::vector<float> master = p->master.toFloats();
            for (std::size_t i = 0; i < master.size(); ++i)
                master[i] -= kLearningRate * gradient[i];
            backend->upload(master.data(), p->master);
            if (p->working.dtype() != p->master.dtype())
                backend->cast(p->master, p->working);
        }
    }
    std::cout << "  loss " << losses.front() << " -> " << losses.back() << "\n";
    for (float loss : losses)
        ASSERT_TRUE(std::isfinite(loss));
    EXPECT_LT(losses.back(), 0.5f * losses.front());
}

INSTANTIATE_TEST_SUITE_P(Modes, CompiledVitTrains,
                         testing::Values(PrecisionMode::Fp32, PrecisionMode::MixedBf16, PrecisionMode::Mxfp8),
                         [](const testing::TestParamInfo<PrecisionMode>& info) {
                             return std::string(enumKey(info.param)) == "mixed-bf16" ? std::string("mixed_bf16")
                                                                                     : std::string(enumKey(info.param));
                         });

} // namespace
} // namespace mantissa::onnx_import
