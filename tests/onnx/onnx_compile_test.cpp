// PyTorch as the oracle for a compiled ONNX graph: the fixtures of make_fixtures.py hold, for one
// batch, torch's logits, cross-entropy loss and every parameter's gradient. The graph compiled
// from the same file runs fp32 forward and backward on the CPU backend and must reproduce them.
#include "engine/onnx/compile_onnx.h"
#include "engine/onnx/import_onnx.h"
#include "engine/onnx/reshape_op.h"
#include "engine/onnx/tensor_proto_file.h"
#include "engine/util/check.h"

#include "torch_fixtures.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

namespace mantissa::onnx_import {
namespace {

using fixtures::importFixture;
using fixtures::kModels;
using fixtures::relativeError;

OnnxTensor reference(const std::string& name, const std::string& key) { return fixtures::reference(name, key); }

std::vector<float> asFloats(const std::vector<std::int64_t>& ints)
{
    return std::vector<float>(ints.begin(), ints.end());
}

// Measured on this CPU backend for the MLP: logits 4.7e-7 of their largest element, loss 0,
// gradients 0.9e-7 to 3.4e-7. Both sides sum fp32 products of up to 192 terms in different
// orders (torch's blocked GEMM, the engine's) and evaluate tanh differently, each rounding by
// 2^-24 = 6e-8 relative, so a few ulps of the largest element is what order alone gives; 1e-6
// is about twice the largest measured.
constexpr double kTolerance = 1e-6;

TEST(OnnxCompile, MlpMatchesPyTorchsLogitsLossAndGradients)
{
    const std::string name = "mlp";
    const OnnxGraph onnx = importFixture(name);
    auto backend = makeCpuBackend(1);
    const CompiledOnnx compiled = compileOnnx(onnx, PrecisionPolicy(PrecisionMode::Fp32), *backend);

    const OnnxTensor input = reference(name, "input");
    const OnnxTensor labels = reference(name, "labels");
    const std::int64_t batch = input.shape.at(0);
    std::vector<std::int64_t> dims = compiled.graph->values()[0].shape.dims();
    dims.insert(dims.begin(), batch);
    PassState pass{*backend};
    GraphForward forward = compiled.graph->forward(pass, Tensor::fromFloats(Shape(dims), input.floats));
    const std::vector<float> logits = forward.output.toFloats();
    const double logitsError = relativeError(logits, reference(name, "logits").floats);
    EXPECT_LE(logitsError, kTolerance);

    Tensor dlogits = backend->empty(forward.output.shape(), DType::F32);
    const Tensor labelTensor = Tensor::fromFloats({batch}, asFloats(labels.ints));
    const LossResult loss = backend->softmaxCrossEntropy(forward.output, labelTensor, 1.0f, &dlogits);
    const double lossError = relativeError({loss.meanLoss}, reference(name, "loss").floats);
    EXPECT_LE(lossError, kTolerance);

    compiled.graph->backward(pass, dlogits, forward, false);
    const std::vector<Parameter*> parameters = compiled.graph->parametersInBackwardOrder();
    EXPECT_EQ(parameters.size(), onnx.parameters.size());
    for (const Parameter* p : parameters) {
        const double error = relativeError(p->fp32Grad.toFloats(), reference(name, "grad/" + p->name).floats);
        EXPECT_LE(error, kTolerance) << p->name;
        std::cout << "  " << p->name << " gradient: relative error " << error << "\n";
    }
    std::cout << "  logits: " << logitsError << ", loss: " << lossError << "\n";
}

// [K, N] weights read by MatMul as they are: the logits are x W1 + b1, ReLU, times W2, tanh,
// times W3, computed here in double from the file's values (W2 is square, so a weight read the
// wrong way round would still fit). fp32 sums of 8 and 6 products against double: within
// 1e-6 of the largest logit, where the measured difference is below 2e-7.
TEST(OnnxCompile, PlainMatMulWeightsComputeXTimesW)
{
    const OnnxGraph onnx = importOnnx(std::string(MANTISSA_ONNX_MODELS) + "/small/plain_matmul.onnx");
    auto backend = makeCpuBackend(1);
    const CompiledOnnx compiled = compileOnnx(onnx, PrecisionPolicy(PrecisionMode::Fp32), *backend);
    EXPECT_EQ(compiled.transposedInitializers, (std::set<std::string>{"w1", "w2", "w3"}));
    const std::vector<float> x = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f, -2.0f, 1.0f};
    const auto product = [&](const std::vector<double>& in, const std::string& weight) {
        const OnnxTensor& w = *onnx.parameter(weight);
        const std::int64_t k = w.shape[0], n = w.shape[1];
        std::vector<double> out(static_cast<std::size_t>(n), 0.0);
        for (std::int64_t j = 0; j < n; ++j)
            for (std::int64_t i = 0; i < k; ++i)
                out[j] += in[i] * w.floats[static_cast<std::size_t>(i * n + j)];
        return out;
    };
    std::vector<double> h = product(std::vector<double>(x.begin(), x.end()), "w1");
    for (std::size_t j = 0; j < h.size(); ++j)
        h[j] = std::max(0.0, h[j] + onnx.parameter("b1")->floats[j]);
    h = product(h, "w2");
    for (double& v : h)
        v = std::tanh(v);
    const std::vector<double> expected = product(h, "w3");

    PassState pass{*backend};
    const std::vector<float> logits = compiled.graph->forward(pass, Tensor::fromFloats({1, 8}, x)).output.toFloats();
    ASSERT_EQ(logits.size(), expected.size());
    const double error = relativeError(logits, std::vector<float>(expected.begin(), expected.end()));
    std::cout << "  plain MatMul logits: relative error " << error << "\n";
    EXPECT_LE(error, 1e-6);
}

TEST(OnnxCompile, AGemmThatIsNoLinearLayerIsRefusedByName)
{
    OnnxGraph onnx = importFixture("mlp");
    auto gemm =
        std::find_if(onnx.nodes.begin(), onnx.nodes.end(), [](const OnnxNode& n) { return n.opType == "Gemm"; });
    ASSERT_NE(gemm, onnx.nodes.end());
    auto transB = std::find_if(gemm->attributes.begin(), gemm->attributes.end(),
                               [](const OnnxAttribute& a) { return a.name == "transB"; });
    ASSERT_NE(transB, gemm->attributes.end());
    transB->i = 0;
    auto backend = makeCpuBackend(1);
    try {
        compileOnnx(onnx, PrecisionPolicy(PrecisionMode::Fp32), *backend);
        FAIL() << "compiled a Gemm with transB = 0";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find(gemm->name + " (Gemm)"), std::string::npos) << e.what();
    }
}

// The reshape's backward hands the gradient back in the input's shape with every value where it
// was: a view both ways, nothing moved or rounded.
TEST(OnnxCompile, ReshapeHandsTheGradientBackInTheInputsShape)
{
    auto backend = makeCpuBackend(1);
    Graph graph(Shape({6}));
    graph.beginGroup("reshape", DType::F32);
    graph.setOutput(
        graph.addNode1(std::make_unique<ReshapeOp>("reshape", DType::F32, Shape({6}), Shape({2, 3})), {graph.input()}));
    std::vector<float> x(12), g(12);
    for (std::size_t i = 0; i < x.size(); ++i) {
        x[i] = 0.5f * static_cast<float>(i);
        g[i] = -0.25f * static_cast<float>(i) + 1.0f;
    }
    PassState pass{*backend};
    GraphForward forward = graph.forward(pass, Tensor::fromFloats({2, 6}, x));
    EXPECT_EQ(forward.output.shape(), Shape({2, 2, 3}));
    EXPECT_EQ(forward.output.toFloats(), x);
    const Tensor dx = graph.backward(pass, Tensor::fromFloats({2, 2, 3}, g), forward, true);
    ASSERT_TRUE(dx.defined());
    EXPECT_EQ(dx.shape(), Shape({2, 6}));
    EXPECT_EQ(dx.toFloats(), g);
}

} // namespace
} // namespace mantissa::onnx_import
