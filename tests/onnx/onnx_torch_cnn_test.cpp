// The convolutional family of the ONNX compiler (compile_conv_nodes.cpp,
// compile_conv_transpose_node.cpp). PyTorch is the oracle for torchvision's ResNet-18 and
// MobileNetV2 and a decoder of transposed convolutions (make_fixtures.py: one batch's logits, loss and
// every parameter's gradient, in training mode, in fp32 and in float64): the compiled graph
// reproduces them in fp32 as closely as PyTorch's fp32 does, and then trains in fp32,
// mixed-bf16 and MXFP8. Small graphs written here check what the fixtures
// do not reach: dilated, grouped and rectangular convolutions against a direct sum, the running
// statistics under ONNX's momentum, count_include_pad, ReLU6's ends, and the refusals.
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
#include <iostream>

namespace mantissa::onnx_import {
namespace {

using fixtures::importFixture;
using fixtures::reference;
using fixtures::relativeError;

Tensor batchOf(const CompiledOnnx& compiled, const OnnxTensor& input)
{
    std::vector<std::int64_t> dims = compiled.graph->values()[0].shape.dims();
    dims.insert(dims.begin(), input.shape.at(0));
    return Tensor::fromFloats(Shape(dims), input.floats);
}

Tensor labelsOf(const OnnxTensor& labels)
{
    return Tensor::fromFloats({static_cast<std::int64_t>(labels.ints.size())},
                              std::vector<float>(labels.ints.begin(), labels.ints.end()));
}

// --- PyTorch's references ---------------------------------------------------------------------

// The largest |a - truth|.
double largestDifference(const std::vector<float>& a, const std::vector<float>& truth)
{
    EXPECT_EQ(a.size(), truth.size());
    double worst = 0;
    for (std::size_t i = 0; i < std::min(a.size(), truth.size()); ++i)
        worst = std::max(worst, std::abs(static_cast<double>(a[i]) - truth[i]));
    return worst;
}

// How far the engine's fp32 result and PyTorch's fp32 result each lie from PyTorch's float64
// result of the same batch (make_fixtures.py), the truth for both. PyTorch's distance is taken
// as at least one fp32 rounding of the tensor's largest element, so that a tensor PyTorch
// happened to get exactly does not ask for exactness.
struct Distances {
    double engine = 0, torch = 0;
    double ratio() const { return engine / torch; }
};

Distances distances(const std::vector<float>& engine, const std::string& name, const std::string& key,
                    const std::string& key64)
{
    const std::vector<float> truth = reference(name, key64).floats;
    double scale = 0;
    for (float v : truth)
        scale = std::max(scale, static_cast<double>(std::abs(v)));
    return {largestDifference(engine, truth),
            std::max(largestDifference(reference(name, key).floats, truth), std::ldexp(scale, -24))};
}

// The engine's fp32 logits and every gradient must lie no further from float64 than
// kFactor times PyTorch's own fp32 result does. An absolute tolerance would not do: these
// networks are conditioned so that fp32's rounding alone moves ResNet-18's logits by 2e-5 and
// its gradients by up to 1.7e-4 of their largest element (PyTorch's fp32 against its float64),
// and a gradient that is 0 in exact arithmetic (a bias that the next batch norm cancels) is
// rounding noise in both, so a relative difference to PyTorch's fp32 means nothing there.
// Measured, engine over PyTorch: ResNet-18 logits 0.87x, gradients at most 1.85x
// (layer4.0.conv2.weight); MobileNetV2 logits 1.24x, gradients at most 2.75x (classifier.1.bias,
// 1.6e-7 against 6e-8; the next is 2.3x). Both are sums of the same fp32 roundings in different
// orders, so a factor of a few either way is what order alone gives; 4 is 1.5x the largest.
constexpr double kFactor = 4.0;

class TorchCnn : public testing::TestWithParam<std::string> {};

TEST_P(TorchCnn, Fp32LogitsLossAndEveryGradientLieAsCloseToFloat64AsPyTorchsFp32)
{
    const std::string name = GetParam();
    const OnnxGraph onnx = importFixture(name);
    auto backend = makeCpuBackend(1);
    const CompiledOnnx compiled = compileOnnx(onnx, PrecisionPolicy(PrecisionMode::Fp32), *backend);

    PassState pass{*backend};
    GraphForward forward = compiled.graph->forward(pass, batchOf(compiled, reference(name, "input")));
    const std::vector<float> logits = forward.output.toFloats();
    const Distances logitsDistance = distances(logits, name, "logits", "logits64");
    EXPECT_LE(logitsDistance.ratio(), kFactor) << "logits";

    Tensor dlogits = backend->empty(forward.output.shape(), DType::F32);
    const LossResult loss =
        backend->softmaxCrossEntropy(forward.output, labelsOf(reference(name, "labels")), 1.0f, &dlogits);
    // The loss is a mean of four log-probabilities near 2.3, well conditioned: measured 6.8e-7
    // (ResNet-18) and 1.1e-7 (MobileNetV2) relative to PyTorch's, a few ulps.
    const double lossError = relativeError({loss.meanLoss}, reference(name, "loss").floats);
    EXPECT_LE(lossError, 2e-6);

    compiled.graph->backward(pass, dlogits, forward, false);
    const std::vector<Parameter*> parameters = compiled.graph->parametersInBackwardOrder();
    EXPECT_EQ(parameters.size(), onnx.parameters.size());
    double worstRatio = 0;
    std::string worstName;
    for (const Parameter* p : parameters) {
        const Distances d = distances(p->grad.toFloats(), name, "grad/" + p->name, "grad64/" + p->name);
        EXPECT_LE(d.ratio(), kFactor) << p->name << ": " << d.engine << " from float64, PyTorch's fp32 " << d.torch;
        if (d.ratio() > worstRatio) {
            worstRatio = d.ratio();
            worstName = p->name;
        }
    }
    std::cout << "  " << name << ": logits " << logitsDistance.engine << " from float64 (PyTorch's fp32 "
              << logitsDistance.torch << "), loss " << lossError << " of PyTorch's; gradients at most " << worstRatio
              << "x PyTorch's fp32 distance from float64 (" << worstName << ") over " << parameters.size()
              << " parameters\n";
}

// decoder: ConvTranspose (grouped, strided, padded, output_padding; dilated without bias) and
// Where on a constant mask, with a constant and with both value inputs computed. sequence_cnn:
// the 1-D Conv, MaxPool, ConvTranspose and AveragePool, run as images of height 1.
INSTANTIATE_TEST_SUITE_P(Torchvision, TorchCnn, testing::Values("resnet18", "mobilenet_v2", "decoder", "sequence_cnn"));

// --- training -----------------------------------------------------------------------------------

struct TrainCase {
    std::string model;
    PrecisionMode mode;
    // The batch norms of the torchvision networks let them fit a batch in ten steps at 0.05; the
    // decoder has none, and takes 20 at 0.2 (PyTorch's own SGD: 2.29 to 0.46).
    int steps = 10;
    float learningRate = 0.05f;
};

class TorchCnnTrains : public testing::TestWithParam<TrainCase> {};

// Plain SGD written here (as onnx_train_compiled_test.cpp), so that what is tested is the
// compiled graph under each policy, not the trainer.
TEST_P(TorchCnnTrains, LossFallsBelowHalfOverAFewSgdSteps)
{
    const auto& [name, mode, steps, learningRate] = GetParam();
    const OnnxGraph onnx = importFixture(name);
    auto backend = makeCpuBackend(1);
    const PrecisionPolicy policy(mode);
    const CompiledOnnx compiled = compileOnnx(onnx, policy, *backend);
    if (policy.recipe() != GemmRecipe::None) {
        ASSERT_GT(compiled.coverage.quantisedCount(), 0u) << compiled.coverage.summary();
    }
    const Tensor x = batchOf(compiled, reference(name, "input"));
    const Tensor y = labelsOf(reference(name, "labels"));
    const std::vector<float> losses =
        fixtures::sgdLosses(compiled, *backend, x, fixtures::crossEntropy(y), steps, learningRate);
    std::cout << "  " << name << " " << enumKey(mode) << ": loss " << losses.front() << " -> " << losses.back() << "\n";
    for (float loss : losses)
        ASSERT_TRUE(std::isfinite(loss));
    // One batch seen again and again: a working network fits it, well below where it started.
    EXPECT_LT(losses.back(), 0.5f * losses.front());
}

std::vector<TrainCase> trainCases()
{
    std::vector<TrainCase> cases;
    for (PrecisionMode mode : {PrecisionMode::Fp32, PrecisionMode::MixedBf16, PrecisionMode::Mxfp8}) {
        cases.push_back({"resnet18", mode});
        cases.push_back({"mobilenet_v2", mode});
        cases.push_back({"decoder", mode, 20, 0.2f});
        cases.push_back({"sequence_cnn", mode, 20, 0.2f});
    }
    return cases;
}

INSTANTIATE_TEST_SUITE_P(Modes, TorchCnnTrains, testing::ValuesIn(trainCases()),
                         [](const testing::TestParamInfo<TrainCase>& info) {
                             std::string mode(enumKey(info.param.mode));
                             std::replace(mode.begin(), mode.end(), '-', '_');
                             return info.param.model + "_" + mode;
                         });

// --- small graphs of one node -------------------------------------------------------------------

OnnxAttribute intsAttribute(const std::string& name, std::vector<std::int64_t> values)
{
    OnnxAttribute a;
    a.name = name;
    a.kind = OnnxAttribute::Kind::Ints;
    a.ints = std::move(values);
    return a;
}

OnnxAttribute intAttribute(const std::string& name, std::int64_t value)
{
    OnnxAttribute a;
    a.name = name;
    a.kind = OnnxAttribute::Kind::Int;
    a.i = value;
    return a;
}

OnnxAttribute floatAttribute(const std::string& name, float value)
{
    OnnxAttribute a;
    a.name = name;
    a.kind = OnnxAttribute::Kind::Float;
    a.f = value;
    return a;
}

OnnxTensor floatTensor(const std::string& name, std::vector<std::int64_t> shape, std::vector<float> values)
{
    OnnxTensor t;
    t.name = name;
    t.type = ElementType::Float32;
    t.shape = std::move(shape);
    t.floats = std::move(values);
    return t;
}

// x -> one node -> y, with its initializers as parameters or constants.
struct OneNode {
    OnnxGraph graph;

    OneNode(const std::string& opType, std::vector<std::int64_t> inputShape, std::vector<std::int64_t> outputShape,
            std::vector<OnnxAttribute> attributes, std::vector<OnnxTensor> parameters = {},
            std::vector<OnnxTensor> constants = {})
    {
        graph.path = opType + ".onnx";
        graph.opsetVersion = 17;
        graph.batchSize = inputShape.at(0);
        graph.inputs = {"x"};
        graph.outputs = {"y"};
        OnnxNode node;
        node.opType = opType;
        node.name = opType + "_0";
        node.inputs = {"x"};
        node.outputs = {"y"};
        node.attributes = std::move(attributes);
        node.supported = true;
        const auto addValue = [this](const std::string& name, std::vector<std::int64_t> shape, ValueKind kind) {
            OnnxValue v;
            v.name = name;
            v.type = ElementType::Float32;
            v.shape = std::move(shape);
            v.kind = kind;
            graph.values.push_back(v);
        };
        addValue("x", std::move(inputShape), ValueKind::Input);
        addValue("y", std::move(outputShape), ValueKind::Activation);
        for (OnnxTensor& p : parameters) {
            node.inputs.push_back(p.name);
            addValue(p.name, p.shape, ValueKind::Parameter);
            graph.parameters.push_back(std::move(p));
        }
        for (OnnxTensor& c : constants) {
            node.inputs.push_back(c.name);
            addValue(c.name, c.shape, ValueKind::Constant);
            graph.constants.push_back(std::move(c));
        }
        graph.nodes.push_back(std::move(node));
    }

    OnnxNode& node() { return graph.nodes.front(); }
};

std::vector<float> ramp(std::size_t n, float scale, float offset)
{
    std::vector<float> values(n);
    for (std::size_t i = 0; i < n; ++i)
        values[i] = std::sin(static_cast<float>(i) * scale + offset);
    return values;
}

// A convolution with every form the fixtures do not use: two groups, dilation 2 by 1, a 3x2
// kernel, strides 2 by 1, padding 2 by 1, and a bias. Its output and both gradients against a
// direct sum in double.
TEST(OnnxConv, DilatedGroupedRectangularMatchesADirectSum)
{
    const std::int64_t n = 2, c = 4, h = 9, w = 7, m = 6, groups = 2, kh = 3, kw = 2;
    const std::int64_t sh = 2, sw = 1, ph = 2, pw = 1, dh = 2, dw = 1;
    const std::int64_t oh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1, ow = (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
    const std::int64_t cg = c / groups, mg = m / groups;
    const std::vector<float> x = ramp(static_cast<std::size_t>(n * c * h * w), 0.37f, 0.1f);
    const std::vector<float> weight = ramp(static_cast<std::size_t>(m * cg * kh * kw), 0.71f, 0.3f);
    const std::vector<float> bias = ramp(static_cast<std::size_t>(m), 1.3f, 0.5f);
    const std::vector<float> dy = ramp(static_cast<std::size_t>(n * m * oh * ow), 0.53f, 0.2f);
    OneNode model("Conv", {n, c, h, w}, {n, m, oh, ow},
                  {intsAttribute("kernel_shape", {kh, kw}), intsAttribute("strides", {sh, sw}),
                   intsAttribute("pads", {ph, pw, ph, pw}), intsAttribute("dilations", {dh, dw}),
                   intAttribute("group", groups)},
                  {floatTensor("W", {m, cg, kh, kw}, weight), floatTensor("B", {m}, bias)});
    auto backend = makeCpuBackend(1);
    const CompiledOnnx compiled = compileOnnx(model.graph, PrecisionPolicy(PrecisionMode::Fp32), *backend);
    PassState pass{*backend};
    GraphForward forward = compiled.graph->forward(pass, Tensor::fromFloats({n, c, h, w}, x));
    const Tensor dx = compiled.graph->backward(pass, Tensor::fromFloats({n, m, oh, ow}, dy), forward, true);

    std::vector<double> y(dy.size()), dxRef(x.size()), dwRef(weight.size()), dbRef(bias.size());
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t f = 0; f < m; ++f)
            for (std::int64_t r = 0; r < oh; ++r)
                for (std::int64_t q = 0; q < ow; ++q) {
                    const auto yi = static_cast<std::size_t>(((i * m + f) * oh + r) * ow + q);
                    double sum = bias[static_cast<std::size_t>(f)];
                    dbRef[static_cast<std::size_t>(f)] += dy[yi];
                    for (std::int64_t k = 0; k < cg; ++k)
                        for (std::int64_t a = 0; a < kh; ++a)
                            for (std::int64_t b = 0; b < kw; ++b) {
                                const std::int64_t row = r * sh - ph + a * dh, col = q * sw - pw + b * dw;
                                if (row < 0 || row >= h || col < 0 || col >= w)
                                    continue;
                                const std::int64_t channel = f / mg * cg + k;
                                const auto xi = static_cast<std::size_t>(((i * c + channel) * h + row) * w + col);
                                const auto wi = static_cast<std::size_t>(((f * cg + k) * kh + a) * kw + b);
                                sum += static_cast<double>(x[xi]) * weight[wi];
                                dxRef[xi] += static_cast<double>(dy[yi]) * weight[wi];
                                dwRef[wi] += static_cast<double>(dy[yi]) * x[xi];
                            }
                    y[yi] = sum;
                }
    const auto asFloats = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
    const std::vector<Parameter*> parameters = compiled.graph->parametersInBackwardOrder();
    ASSERT_EQ(parameters.size(), 2u);
    // Sums of at most 12 (forward, data) and 2 x 5 x 7 (filter) fp32 products: a few ulps.
    constexpr double kTolerance = 1e-6;
    EXPECT_LE(relativeError(forward.output.toFloats(), asFloats(y)), kTolerance);
    EXPECT_LE(relativeError(dx.toFloats(), asFloats(dxRef)), kTolerance);
    for (const Parameter* p : parameters)
        EXPECT_LE(relativeError(p->grad.toFloats(), asFloats(p->name == "W" ? dwRef : dbRef)), kTolerance) << p->name;
}

// One axis of a window as ONNX has it: padding before and after, stride, dilation.
struct Window {
    std::int64_t begin, end, stride, dilation;
};

// A convolution padded unequally, which compiles as a larger equal padding and a crop: along H
// TensorFlow's SAME at stride 2 on an even image (nothing before, one row after), along W more
// before than after. Output and every gradient against a direct sum in double.
TEST(OnnxConv, UnequalPaddingMatchesADirectSum)
{
    const std::int64_t n = 2, c = 3, h = 8, w = 6, m = 4, kh = 3, kw = 3;
    const Window wh{0, 1, 2, 1}, ww{2, 1, 1, 1};
    const std::int64_t oh = (h + wh.begin + wh.end - kh) / wh.stride + 1;
    const std::int64_t ow = (w + ww.begin + ww.end - kw) / ww.stride + 1;
    const std::vector<float> x = ramp(static_cast<std::size_t>(n * c * h * w), 0.37f, 0.1f);
    const std::vector<float> weight = ramp(static_cast<std::size_t>(m * c * kh * kw), 0.71f, 0.3f);
    const std::vector<float> bias = ramp(static_cast<std::size_t>(m), 1.3f, 0.5f);
    const std::vector<float> dy = ramp(static_cast<std::size_t>(n * m * oh * ow), 0.53f, 0.2f);
    OneNode model(
        "Conv", {n, c, h, w}, {n, m, oh, ow},
        {intsAttribute("strides", {wh.stride, ww.stride}), intsAttribute("pads", {wh.begin, ww.begin, wh.end, ww.end})},
        {floatTensor("W", {m, c, kh, kw}, weight), floatTensor("B", {m}, bias)});
    auto backend = makeCpuBackend(1);
    const CompiledOnnx compiled = compileOnnx(model.graph, PrecisionPolicy(PrecisionMode::Fp32), *backend);
    PassState pass{*backend};
    GraphForward forward = compiled.graph->forward(pass, Tensor::fromFloats({n, c, h, w}, x));
    const Tensor dx = compiled.graph->backward(pass, Tensor::fromFloats({n, m, oh, ow}, dy), forward, true);

    std::vector<double> y(dy.size()), dxRef(x.size()), dwRef(weight.size()), dbRef(bias.size());
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t f = 0; f < m; ++f)
            for (std::int64_t r = 0; r < oh; ++r)
                for (std::int64_t q = 0; q < ow; ++q) {
                    const auto yi = static_cast<std::size_t>(((i * m + f) * oh + r) * ow + q);
                    double sum = bias[static_cast<std::size_t>(f)];
                    dbRef[static_cast<std::size_t>(f)] += dy[yi];
                    for (std::int64_t k = 0; k < c; ++k)
                        for (std::int64_t a = 0; a < kh; ++a)
                            for (std::int64_t b = 0; b < kw; ++b) {
                                const std::int64_t row = r * wh.stride - wh.begin + a,
                                                   col = q * ww.stride - ww.begin + b;
                                if (row < 0 || row >= h || col < 0 || col >= w)
                                    continue;
                                const auto xi = static_cast<std::size_t>(((i * c + k) * h + row) * w + col);
                                const auto wi = static_cast<std::size_t>(((f * c + k) * kh + a) * kw + b);
                                sum += static_cast<double>(x[xi]) * weight[wi];
                                dxRef[xi] += static_cast<double>(dy[yi]) * weight[wi];
                                dwRef[wi] += static_cast<double>(dy[yi]) * x[xi];
                            }
                    y[yi] = sum;
                }
    const auto asFloats = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
    const std::vector<Parameter*> parameters = compiled.graph->parametersInBackwardOrder();
    ASSERT_EQ(parameters.size(), 2u);
    // Sums of at most 27 (forward, data) and 2 x 4 x 7 (filter) fp32 products: a few ulps.
    constexpr double kTolerance = 1e-6;
    EXPECT_LE(relativeError(forward.output.toFloats(), asFloats(y)), kTolerance);
    EXPECT_LE(relativeError(dx.toFloats(), asFloats(dxRef)), kTolerance);
    for (const Parameter* p : parameters)
        EXPECT_LE(relativeError(p->grad.toFloats(), asFloats(p->name == "W" ? dwRef : dbRef)), kTolerance) << p->name;
}

// A transposed convolution with every form at once: two groups, strides 2 by 3, dilation 1 by 2,
// a 3x2 kernel, output_padding along H, and along W one pixel more padding after than before,
// which the engine computes as a larger output and a crop. Output and every gradient against
// the definition (each input pixel scattered through the kernel) in double.
TEST(OnnxConvTranspose, GroupedStridedDilatedPaddedMatchesADirectScatter)
{
    const std::int64_t n = 2, c = 4, h = 3, w = 4, groups = 2, mg = 3, m = groups * mg, kh = 3, kw = 2;
    const std::int64_t cg = c / groups;
    const Window wh{1, 1, 2, 1}, ww{0, 1, 3, 2};
    const std::int64_t outputPaddingH = 1;
    const std::int64_t oh = wh.stride * (h - 1) + outputPaddingH + wh.dilation * (kh - 1) + 1 - wh.begin - wh.end;
    const std::int64_t ow = ww.stride * (w - 1) + ww.dilation * (kw - 1) + 1 - ww.begin - ww.end;
    const std::vector<float> x = ramp(static_cast<std::size_t>(n * c * h * w), 0.37f, 0.1f);
    const std::vector<float> weight = ramp(static_cast<std::size_t>(c * mg * kh * kw), 0.71f, 0.3f);
    const std::vector<float> bias = ramp(static_cast<std::size_t>(m), 1.3f, 0.5f);
    const std::vector<float> dy = ramp(static_cast<std::size_t>(n * m * oh * ow), 0.53f, 0.2f);
    OneNode model("ConvTranspose", {n, c, h, w}, {n, m, oh, ow},
                  {intsAttribute("strides", {wh.stride, ww.stride}),
                   intsAttribute("dilations", {wh.dilation, ww.dilation}), intAttribute("group", groups),
                   intsAttribute("output_padding", {outputPaddingH, 0}),
                   intsAttribute("pads", {wh.begin, ww.begin, wh.end, ww.end})},
                  {floatTensor("W", {c, mg, kh, kw}, weight), floatTensor("B", {m}, bias)});
    auto backend = makeCpuBackend(1);
    const CompiledOnnx compiled = compileOnnx(model.graph, PrecisionPolicy(PrecisionMode::Fp32), *backend);
    PassState pass{*backend};
    GraphForward forward = compiled.graph->forward(pass, Tensor::fromFloats({n, c, h, w}, x));
    const Tensor dx = compiled.graph->backward(pass, Tensor::fromFloats({n, m, oh, ow}, dy), forward, true);

    std::vector<double> y(dy.size()), dxRef(x.size()), dwRef(weight.size()), dbRef(bias.size());
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t f = 0; f < m; ++f)
            for (std::int64_t r = 0; r < oh; ++r)
                for (std::int64_t q = 0; q < ow; ++q) {
                    const auto yi = static_cast<std::size_t>(((i * m + f) * oh + r) * ow + q);
                    y[yi] += bias[static_cast<std::size_t>(f)];
                    dbRef[static_cast<std::size_t>(f)] += dy[yi];
                }
    for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t k = 0; k < c; ++k)
            for (std::int64_t r = 0; r < h; ++r)
                for (std::int64_t q = 0; q < w; ++q)
                    for (std::int64_t g = 0; g < mg; ++g)
                        for (std::int64_t a = 0; a < kh; ++a)
                            for (std::int64_t b = 0; b < kw; ++b) {
                                // Row r * stride + a * dilation of the full output is row - begin here.
                                const std::int64_t row = r * wh.stride + a * wh.dilation - wh.begin;
                                const std::int64_t col = q * ww.stride + b * ww.dilation - ww.begin;
                                if (row < 0 || row >= oh || col < 0 || col >= ow)
                                    continue;
                                const std::int64_t f = k / cg * mg + g;
                                const auto xi = static_cast<std::size_t>(((i * c + k) * h + r) * w + q);
                                const auto wi = static_cast<std::size_t>(((k * mg + g) * kh + a) * kw + b);
                                const auto yi = static_cast<std::size_t>(((i * m + f) * oh + row) * ow + col);
                                y[yi] += static_cast<double>(x[xi]) * weight[wi];
                                dxRef[xi] += static_cast<double>(dy[yi]) * weight[wi];
                                dwRef[wi] += static_cast<double>(dy[yi]) * x[xi];
                            }
    const auto asFloats = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
    const std::vector<Parameter*> parameters = compiled.graph->parametersInBackwardOrder();
    ASSERT_EQ(parameters.size(), 2u);
    // Sums of at most a dozen (forward, data) and a few dozen (filter, bias) fp32 products.
    constexpr double kTolerance = 1e-6;
    EXPECT_LE(relativeError(forward.output.toFloats(), asFloats(y)), kTolerance);
    EXPECT_LE(relativeError(dx.toFloats(), asFloats(dxRef)), kTolerance);
    for (const Parameter* p : parameters)
        EXPECT_LE(relativeError(p->grad.toFloats(), asFloats(p->name == "W" ? dwRef : dbRef)), kTolerance) << p->name;
}

// The running statistics start from the file and move by ONNX's momentum: running x momentum +
// batch x (1 - momentum), the variance the unbiased one of the batch (as PyTorch, which exports
// these files).
TEST(OnnxBatchNormalization, RunningStatisticsStartFromTheFileAndMoveByOnnxsMomentum)
{
    const std::int64_t n = 3, c = 2, h = 2, w = 2;
    const float momentum = 0.75f;
    const std::vector<float> x = ramp(static_cast<std::size_t>(n * c * h * w), 0.9f, 0.0f);
    const std::vector<float> mean0{0.5f, -1.0f}, var0{2.0f, 0.25f};
    OneNode model(
        "BatchNormalization", {n, c, h, w}, {n, c, h, w},
        {floatAttribute("momentum", momentum), floatAttribute("epsilon", 1e-5f), intAttribute("training_mode", 1)},
        {floatTensor("scale", {c}, {1.5f, 0.5f}), floatTensor("B", {c}, {0.25f, -0.5f})},
        {floatTensor("mean", {c}, mean0), floatTensor("var", {c}, var0)});
    auto backend = makeCpuBackend(1);
    const CompiledOnnx compiled = compileOnnx(model.graph, PrecisionPolicy(PrecisionMode::Fp32), *backend);
    const auto buffers = compiled.graph->buffers();
    ASSERT_EQ(buffers.size(), 2u);
    EXPECT_EQ(buffers[0].second->toFloats(), mean0);
    EXPECT_EQ(buffers[1].second->toFloats(), var0);

    PassState pass{*backend};
    compiled.graph->forward(pass, Tensor::fromFloats({n, c, h, w}, x));
    for (std::int64_t ch = 0; ch < c; ++ch) {
        double sum = 0, squares = 0;
        const std::int64_t count = n * h * w;
        for (std::int64_t i = 0; i < n; ++i)
            for (std::int64_t p = 0; p < h * w; ++p)
                sum += x[static_cast<std::size_t>((i * c + ch) * h * w + p)];
        const double mean = sum / static_cast<double>(count);
        for (std::int64_t i = 0; i < n; ++i)
            for (std::int64_t p = 0; p < h * w; ++p)
                squares += std::pow(x[static_cast<std::size_t>((i * c + ch) * h * w + p)] - mean, 2);
        const double unbiased = squares / static_cast<double>(count - 1);
        const auto k = static_cast<std::size_t>(ch);
        EXPECT_NEAR(buffers[0].second->toFloats()[k], momentum * mean0[k] + (1 - momentum) * mean, 1e-6);
        EXPECT_NEAR(buffers[1].second->toFloats()[k], momentum * var0[k] + (1 - momentum) * unbiased, 1e-6);
    }
}

// A 3x3 window with padding 1 over a 3x3 image of ones: the corner window holds 4 inputs, so it
// averages to 1 without the padding and to 4/9 with it.
TEST(OnnxAveragePool, CountIncludePadDividesByTheWholeWindow)
{
    for (std::int64_t include : {0, 1}) {
        OneNode model("AveragePool", {1, 1, 3, 3}, {1, 1, 3, 3},
                      {intsAttribute("kernel_shape", {3, 3}), intsAttribute("pads", {1, 1, 1, 1}),
                       intAttribute("count_include_pad", include)});
        auto backend = makeCpuBackend(1);
        const CompiledOnnx compiled = compileOnnx(model.graph, PrecisionPolicy(PrecisionMode::Fp32), *backend);
        PassState pass{*backend};
        pass.training = false;
        const std::vector<float> y =
            compiled.graph->forward(pass, Tensor::fromFloats({1, 1, 3, 3}, std::vector<float>(9, 1.0f)))
                .output.toFloats();
        EXPECT_FLOAT_EQ(y[0], include ? 4.0f / 9.0f : 1.0f) << "count_include_pad " << include;
        EXPECT_FLOAT_EQ(y[4], 1.0f);
    }
}

// Pools padded unequally (TensorFlow's SAME at stride 2 on an even image along H: nothing
// before, one row after; more before than after along W), max and average with and without the
// padding counted: output and input gradient against a direct computation in double. ONNX's
// windows start at the padding before and reach the padding after; a max pool's padding is
// -inf, an average's zeros, counted in the divisor only with count_include_pad.
TEST(OnnxPool, UnequalPaddingMatchesADirectComputation)
{
    const std::int64_t n = 2, c = 2, h = 6, w = 7, kh = 3, kw = 2;
    const Window wh{0, 1, 2, 1}, ww{1, 0, 2, 1};
    const std::int64_t oh = (h + wh.begin + wh.end - kh) / wh.stride + 1;
    const std::int64_t ow = (w + ww.begin + ww.end - kw) / ww.stride + 1;
    const std::vector<float> x = ramp(static_cast<std::size_t>(n * c * h * w), 0.37f, 0.1f);
    const std::vector<float> dy = ramp(static_cast<std::size_t>(n * c * oh * ow), 0.53f, 0.2f);
    for (const char* op : {"MaxPool", "AveragePool"})
        for (std::int64_t include : {0, 1}) {
            const bool max = std::string(op) == "MaxPool";
            if (max && include)
                continue;
            SCOPED_TRACE(std::string(op) + " count_include_pad " + std::to_string(include));
            OneNode model(op, {n, c, h, w}, {n, c, oh, ow},
                          {intsAttribute("kernel_shape", {kh, kw}), intsAttribute("strides", {wh.stride, ww.stride}),
                           intsAttribute("pads", {wh.begin, ww.begin, wh.end, ww.end}),
                           intAttribute("count_include_pad", include)});
            auto backend = makeCpuBackend(1);
            const CompiledOnnx compiled = compileOnnx(model.graph, PrecisionPolicy(PrecisionMode::Fp32), *backend);
            PassState pass{*backend};
            GraphForward forward = compiled.graph->forward(pass, Tensor::fromFloats({n, c, h, w}, x));
            const Tensor dx = compiled.graph->backward(pass, Tensor::fromFloats({n, c, oh, ow}, dy), forward, true);

            std::vector<double> y(dy.size()), dxRef(x.size());
            for (std::int64_t plane = 0; plane < n * c; ++plane)
                for (std::int64_t r = 0; r < oh; ++r)
                    for (std::int64_t q = 0; q < ow; ++q) {
                        const auto yi = static_cast<std::size_t>((plane * oh + r) * ow + q);
                        std::vector<std::size_t> inside;
                        for (std::int64_t a = 0; a < kh; ++a)
                            for (std::int64_t b = 0; b < kw; ++b) {
                                const std::int64_t row = r * wh.stride - wh.begin + a,
                                                   col = q * ww.stride - ww.begin + b;
                                if (row >= 0 && row < h && col >= 0 && col < w)
                                    inside.push_back(static_cast<std::size_t>((plane * h + row) * w + col));
                            }
                        ASSERT_FALSE(inside.empty());
                        if (max) {
                            std::size_t best = inside.front(); // the first maximum, as PyTorch takes it
                            for (std::size_t i : inside)
                                best = x[i] > x[best] ? i : best;
                            y[yi] = x[best];
                            dxRef[best] += dy[yi];
                            continue;
                        }
                        const double divisor = include ? static_cast<double>(kh * kw) : double(inside.size());
                        for (std::size_t i : inside) {
                            y[yi] += x[i] / divisor;
                            dxRef[i] += dy[yi] / divisor;
                        }
                    }
            const auto asFloats = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
            // Means and sums of at most six fp32 values: a few ulps.
            constexpr double kTolerance = 1e-6;
            EXPECT_LE(relativeError(forward.output.toFloats(), asFloats(y)), kTolerance);
            EXPECT_LE(relativeError(dx.toFloats(), asFloats(dxRef)), kTolerance);
        }
}

// MobileNet's ReLU6 is Clip(0, 6); its gradient passes strictly inside, as PyTorch's hardtanh.
TEST(OnnxClip, Relu6ClampsAndPassesTheGradientStrictlyInside)
{
    OneNode model("Clip", {1, 6}, {1, 6}, {}, {}, {floatTensor("lo", {}, {0.0f}), floatTensor("hi", {}, {6.0f})});
    auto backend = makeCpuBackend(1);
    const CompiledOnnx compiled = compileOnnx(model.graph, PrecisionPolicy(PrecisionMode::Fp32), *backend);
    PassState pass{*backend};
    GraphForward forward =
        compiled.graph->forward(pass, Tensor::fromFloats({1, 6}, {-1.0f, 0.0f, 2.5f, 6.0f, 7.0f, 0.5f}));
    EXPECT_EQ(forward.output.toFloats(), (std::vector<float>{0.0f, 0.0f, 2.5f, 6.0f, 6.0f, 0.5f}));
    const Tensor dx =
        compiled.graph->backward(pass, Tensor::fromFloats({1, 6}, std::vector<float>(6, 2.0f)), forward, true);
    EXPECT_EQ(dx.toFloats(), (std::vector<float>{0.0f, 0.0f, 2.0f, 0.0f, 0.0f, 2.0f}));
}

void expectRefused(OnnxGraph& graph, const std::string& why)
{
    auto backend = makeCpuBackend(1);
    try {
        compileOnnx(graph, PrecisionPolicy(PrecisionMode::Fp32), *backend);
        FAIL() << "compiled " << graph.nodes.front().opType << " where it should refuse: " << why;
    } catch (const ConfigError& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find(graph.nodes.front().name + " (" + graph.nodes.front().opType + ")"), std::string::npos)
            << message;
        EXPECT_NE(message.find(why), std::string::npos) << message;
    }
}

TEST(OnnxConvRefusals, AWindowOfPaddingAPartialCeilWindowIndicesAndVolumesAreRefusedByName)
{
    // Padded 3 before an axis, a window of 3 lies wholly in the padding: nothing to pool.
    OneNode pool("MaxPool", {1, 2, 5, 5}, {1, 2, 7, 5},
                 {intsAttribute("kernel_shape", {3, 3}), intsAttribute("pads", {3, 1, 2, 1})});
    expectRefused(pool.graph, "wholly in the padding");

    // ceil_mode = 1 where the windows tile the image exactly changes nothing and compiles.
    OneNode even(
        "MaxPool", {1, 1, 6, 6}, {1, 1, 3, 3},
        {intsAttribute("kernel_shape", {2, 2}), intsAttribute("strides", {2, 2}), intAttribute("ceil_mode", 1)});
    auto backend = makeCpuBackend(1);
    EXPECT_NO_THROW(compileOnnx(even.graph, PrecisionPolicy(PrecisionMode::Fp32), *backend));
    OneNode odd(
        "MaxPool", {1, 1, 5, 5}, {1, 1, 3, 3},
        {intsAttribute("kernel_shape", {2, 2}), intsAttribute("strides", {2, 2}), intAttribute("ceil_mode", 1)});
    expectRefused(odd.graph, "ceil_mode = 1");

    OneNode indices("MaxPool", {1, 1, 4, 4}, {1, 1, 2, 2},
                    {intsAttribute("kernel_shape", {2, 2}), intsAttribute("strides", {2, 2})});
    indices.node().outputs.push_back("indices");
    OnnxNode reader;
    reader.opType = "Identity";
    reader.name = "reader";
    reader.inputs = {"indices"};
    reader.outputs = {"z"};
    reader.supported = true;
    indices.graph.nodes.push_back(reader);
    expectRefused(indices.graph, "Indices");

    OneNode volume("Conv", {1, 2, 4, 4, 4}, {1, 2, 2, 2, 2}, {},
                   {floatTensor("W", {2, 2, 3, 3, 3}, std::vector<float>(108, 0.1f))});
    expectRefused(volume.graph, "the engine has no 3-D convolution");
    OneNode volumePool("AveragePool", {1, 2, 4, 4, 4}, {1, 2, 2, 2, 2}, {intsAttribute("kernel_shape", {2, 2, 2})});
    expectRefused(volumePool.graph, "the engine has no 3-D convolution or pooling");
    OneNode lineStrides("Conv", {1, 2, 9}, {1, 2, 7}, {intsAttribute("strides", {1, 1})},
                        {floatTensor("W", {2, 2, 3}, std::vector<float>(12, 0.1f))});
    expectRefused(lineStrides.graph, "strides [1, 1] must have one value for a 1-D image");

    OneNode groups("Conv", {1, 3, 5, 5}, {1, 2, 3, 3}, {intAttribute("group", 2)},
                   {floatTensor("W", {2, 1, 3, 3}, std::vector<float>(18, 0.1f))});
    expectRefused(groups.graph, "does not divide");

    // Rows past those a transposed convolution reaches: output_padding not below the stride.
    OneNode past("ConvTranspose", {1, 1, 4, 4}, {1, 1, 7, 7}, {intsAttribute("output_padding", {1, 1})},
                 {floatTensor("W", {1, 1, 3, 3}, std::vector<float>(9, 0.1f))});
    expectRefused(past.graph, "past the last the transposed convolution reaches");
    // An output_shape two rows past the 9 it reaches pads -1 before: a row before its first.
    OneNode before("ConvTranspose", {1, 1, 4, 4}, {1, 1, 11, 9},
                   {intsAttribute("strides", {2, 2}), intsAttribute("output_shape", {11, 9})},
                   {floatTensor("W", {1, 1, 3, 3}, std::vector<float>(9, 0.1f))});
    expectRefused(before.graph, "starts the output before the transposed convolution's first row");
}

} // namespace
} // namespace mantissa::onnx_import
