// The causal transformer of make_fixtures.py (token and position embeddings, two
// nn.TransformerEncoderLayer blocks with GELU and a causal mask, a head tied to the token
// table), compiled from its ONNX file: fp32 logits, loss and every parameter's gradient match
// PyTorch's, and the graph trains in fp32, mixed-bf16 and MXFP8.
//
// Its dropouts drop nothing (p = 0) and are made Identity here, so that what is compared is the
// tensor ops' arithmetic alone, whatever Dropout compiles to.
#include "engine/model/layers/token_embedding.h"
#include "engine/onnx/compile_onnx.h"
#include "engine/onnx/import_onnx.h"
#include "engine/onnx/tensor_proto_file.h"
#include "engine/util/check.h"

#include "torch_fixtures.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>

namespace mantissa::onnx_import {
namespace {

using fixtures::kModels;
const std::string kName = "causal_transformer";

OnnxTensor reference(const std::string& key) { return fixtures::reference(kName, key); }

// The fixture imported for its batch, each Dropout of ratio 0 replaced by an Identity.
OnnxGraph importTransformer()
{
    const nlohmann::json facts = fixtures::facts(kName);
    ImportOptions options;
    options.sampleShape = facts.at("sample_shape").get<std::vector<std::int64_t>>();
    options.batchSize = facts.at("batch").get<std::int64_t>();
    OnnxGraph onnx = importOnnx(kModels + kName + ".onnx", options);
    int dropouts = 0;
    for (OnnxNode& node : onnx.nodes) {
        if (node.opType != "Dropout")
            continue;
        const OnnxTensor* ratio = node.inputs.size() > 1 ? onnx.constant(node.inputs[1]) : nullptr;
        if (!ratio || ratio->floats.size() != 1 || ratio->floats[0] != 0.0f)
            throw std::runtime_error(node.name + " drops values; the fixture's dropouts are p = 0");
        node.opType = "Identity";
        node.inputs.resize(1);
        node.outputs.resize(1);
        node.attributes.clear();
        ++dropouts;
    }
    EXPECT_EQ(dropouts, 6); // three per encoder layer
    return onnx;
}

using fixtures::relativeError;

struct Batch {
    Tensor ids;    // [batch, tokens], whole numbers as fp32
    Tensor labels; // [batch * tokens]
};

Batch referenceBatch()
{
    const OnnxTensor input = reference("input");
    const OnnxTensor labels = reference("labels");
    return {Tensor::fromFloats(Shape(input.shape), std::vector<float>(input.ints.begin(), input.ints.end())),
            Tensor::fromFloats({static_cast<std::int64_t>(labels.ints.size())},
                               std::vector<float>(labels.ints.begin(), labels.ints.end()))};
}

// Per-token language modelling: every position's logits against its label, the mean over all.
LossResult tokenLoss(Backend& backend, const Tensor& logits, const Tensor& labels, Tensor& dlogits)
{
    const std::int64_t vocabulary = logits.shape()[logits.shape().rank() - 1];
    const Shape rows({labels.numel(), vocabulary});
    Tensor flatGradient = dlogits.reshaped(rows);
    return backend.softmaxCrossEntropy(logits.reshaped(rows), labels, 1.0f, &flatGradient);
}

// Measured on this CPU backend: logits 1.7e-7 of their largest element, loss 0, gradients up
// to 5.4e-7 (the first layer norm's bias, at the end of the longest backward path). Both sides
// round every op's fp32 result (2^-24 = 6e-8 relative) but sum in other orders (torch's blocked
// GEMMs and attention, the engine's), and evaluate erf, exp and the layer norm's inverse square
// root with other polynomials, so a few ulps of the largest element, compounded through two
// blocks and back, are what order alone gives. The bounds are about twice the largest measured.
constexpr double kForwardTolerance = 4e-7;
constexpr double kGradientTolerance = 1.1e-6;

TEST(OnnxTransformer, CausalTransformerMatchesPyTorchsLogitsLossAndGradients)
{
    const OnnxGraph onnx = importTransformer();
    auto backend = makeCpuBackend(1);
    const CompiledOnnx compiled = compileOnnx(onnx, PrecisionPolicy(PrecisionMode::Fp32), *backend);
    const Batch batch = referenceBatch();

    PassState pass{*backend};
    GraphForward forward = compiled.graph->forward(pass, batch.ids);
    const double logitsError = relativeError(forward.output.toFloats(), reference("logits").floats);
    EXPECT_LE(logitsError, kForwardTolerance);

    Tensor dlogits = backend->empty(forward.output.shape(), DType::F32);
    const LossResult loss = tokenLoss(*backend, forward.output, batch.labels, dlogits);
    const double lossError = relativeError({loss.meanLoss}, reference("loss").floats);
    EXPECT_LE(lossError, kForwardTolerance);

    compiled.graph->backward(pass, dlogits, forward, false);
    const std::vector<Parameter*> parameters = compiled.graph->parametersInBackwardOrder();
    // Every initializer is one parameter, the tied table once.
    EXPECT_EQ(parameters.size(), onnx.parameters.size());
    double worst = 0;
    for (const Parameter* p : parameters) {
        const double error = relativeError(p->fp32Grad.toFloats(), reference("grad/" + p->name).floats);
        EXPECT_LE(error, kGradientTolerance) << p->name;
        worst = std::max(worst, error);
        std::cout << "  " << p->name << " gradient: relative error " << error << "\n";
    }
    std::cout << "  logits: " << logitsError << ", loss: " << lossError << ", largest gradient error: " << worst
              << "\n";
}

class CompiledTransformerTrains : public testing::TestWithParam<PrecisionMode> {};

// Plain SGD steps on PyTorch's reference batch, written here (gradient from the working-type
// grad, update of the fp32 master, working copy rounded from it) as onnx_train_compiled_test does.
TEST_P(CompiledTransformerTrains, LossFallsOverFortySgdSteps)
{
    const OnnxGraph onnx = importTransformer();
    auto backend = makeCpuBackend(1);
    const PrecisionPolicy policy(GetParam());
    const CompiledOnnx compiled = compileOnnx(onnx, policy, *backend);
    if (policy.recipe() != GemmRecipe::None) {
        ASSERT_GT(compiled.coverage.quantisedCount(), 0u) << compiled.coverage.summary();
        std::cout << "  " << compiled.coverage.summary() << "\n";
    }
    const Batch batch = referenceBatch();
    const std::vector<float> losses = fixtures::sgdLosses(
        compiled, *backend, batch.ids,
        [&](Backend& b, const Tensor& logits, Tensor& dlogits) {
            return tokenLoss(b, logits, batch.labels, dlogits).meanLoss;
        },
        40, 0.5f);
    std::cout << "  loss " << losses.front() << " -> " << losses.back() << "\n";
    for (float loss : losses)
        ASSERT_TRUE(std::isfinite(loss));
    // One batch seen forty times: a working model fits it, well below where it started.
    EXPECT_LT(losses.back(), 0.5f * losses.front());
}

INSTANTIATE_TEST_SUITE_P(Modes, CompiledTransformerTrains,
                         testing::Values(PrecisionMode::Fp32, PrecisionMode::MixedBf16, PrecisionMode::Mxfp8),
                         fixtures::modeTestName);

} // namespace
} // namespace mantissa::onnx_import
