// The backward of the tensor ops the ONNX compiler makes (elementwise arithmetic, softmax,
// reductions, transposes, slices and the other moves), checked against central differences of
// their own forward: for a random output gradient dy, the input's gradient dx must be the
// derivative of sum(dy * y). ONNX's own node tests (Debian's libonnx-testdata) give the models
// and inputs; the binary arithmetic, which those tests feed two data inputs, is checked on graphs
// built here, with computed, constant and parameter operands.
#include "engine/onnx/compile_onnx.h"
#include "engine/onnx/elementwise_op.h"
#include "engine/onnx/import_onnx.h"
#include "engine/onnx/onnx_import_error.h"
#include "engine/onnx/parameter_holder.h"
#include "engine/util/check.h"
#include "node_test_data.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

namespace mantissa::onnx_import {
namespace {

namespace fs = std::filesystem;

const fs::path kNodeTests = fs::path(MANTISSA_ONNX_TESTDATA) / "node";

// sum(dy * f(x)) in double, from an fp32 forward.
double weightedOutput(const Graph& graph, Backend& backend, const Tensor& x, const std::vector<float>& dy)
{
    PassState pass{backend};
    pass.training = false;
    const std::vector<float> y = graph.forward(pass, x).output.toFloats();
    double sum = 0;
    for (std::size_t i = 0; i < y.size(); ++i)
        sum += static_cast<double>(dy[i]) * y[i];
    return sum;
}

std::vector<float> pattern(std::size_t count, float phase)
{
    std::vector<float> values(count);
    for (std::size_t i = 0; i < count; ++i)
        values[i] = std::sin(1.7f * static_cast<float>(i) + phase);
    return values;
}

// Samples up to `samples` entries of `values` (the input, or a parameter's master) and returns
// the largest |analytic - numeric| over the largest |analytic|: a central difference with a step
// of 1e-3 per unit of the value.
double differenceError(const std::vector<float>& analytic, std::vector<float>& values,
                       const std::function<double()>& evaluate, const std::function<void()>& store,
                       std::size_t samples = 24)
{
    // At least 1e-2, so that a gradient that is exactly 0 (x - x, x / x) is measured against the
    // order-one gradients elsewhere, not against its own rounding.
    double worst = 0, scale = 1e-2;
    for (float g : analytic)
        scale = std::max(scale, std::abs(static_cast<double>(g)));
    const std::size_t stride = std::max<std::size_t>(1, values.size() / samples);
    for (std::size_t i = 0; i < values.size(); i += stride) {
        const float original = values[i];
        const float h = 1e-3f * std::max(1.0f, std::abs(original));
        values[i] = original + h;
        store();
        const double plus = evaluate();
        values[i] = original - h;
        store();
        const double minus = evaluate();
        values[i] = original;
        store();
        const double numeric = (plus - minus) / (2.0 * static_cast<double>(h));
        worst = std::max(worst, std::abs(numeric - analytic[i]) / scale);
    }
    return worst;
}

// The input's gradient of `graph` at `x` against central differences.
double inputGradientError(const Graph& graph, Backend& backend, const Tensor& x)
{
    PassState pass{backend};
    GraphForward forward = graph.forward(pass, x);
    const std::vector<float> dy = pattern(static_cast<std::size_t>(forward.output.numel()), 0.3f);
    const Tensor dx = graph.backward(pass, Tensor::fromFloats(forward.output.shape(), dy), forward, true);
    std::vector<float> values = x.toFloats();
    Tensor probe = Tensor::fromFloats(x.shape(), values);
    return differenceError(
        dx.toFloats(), values, [&] { return weightedOutput(graph, backend, probe, dy); },
        [&] { probe = Tensor::fromFloats(x.shape(), values); });
}

// Measured: the largest error of any check here is 1.6e-4 (test_sqrt, whose curvature near its
// small inputs the step feels); a wrong formula, a lost path or a gradient in the wrong place
// gives errors of order 1. The bound is about twice the largest measured.
constexpr double kTolerance = 3.5e-4;

TEST(OnnxOpGradients, NodeTestsOfTheTensorOpsMatchCentralDifferences)
{
    if (!fs::is_directory(kNodeTests))
        GTEST_SKIP() << "no ONNX test data under " << kNodeTests << " (Debian package libonnx-testdata)";
    const std::set<std::string> ops{
        "Sqrt",    "Erf",       "Softmax", "LogSoftmax",        "ReduceMean", "Transpose", "Gather", "Split", "Slice",
        "Squeeze", "Unsqueeze", "Expand",  "Reshape",           "Concat",     "MatMul",    "Add",    "Sub",   "Mul",
        "Div",     "Pow",       "Cast",    "LayerNormalization"};
    std::vector<fs::path> folders;
    for (const auto& entry : fs::directory_iterator(kNodeTests))
        if (fs::exists(entry.path() / "model.onnx") && fs::exists(entry.path() / "test_data_set_0/input_0.pb"))
            folders.push_back(entry.path());
    std::sort(folders.begin(), folders.end());
    auto backend = makeCpuBackend(1);
    int checked = 0;
    double worst = 0;
    for (const fs::path& folder : folders) {
        OnnxGraph onnx;
        CompiledOnnx compiled;
        try {
            ImportOptions options;
            options.requireParameters = false;
            options.fixedInputs = nodeTestIntegerInputs(folder);
            onnx = importOnnx((folder / "model.onnx").string(), options);
            if (onnx.nodes.empty() || !onnx.unsupportedNodes().empty() ||
                !std::all_of(onnx.nodes.begin(), onnx.nodes.end(),
                             [&](const OnnxNode& n) { return ops.count(n.opType) != 0; }))
                continue;
            compiled = compileOnnx(onnx, PrecisionPolicy(PrecisionMode::Fp32), *backend);
        } catch (const OnnxImportError&) {
            continue;
        } catch (const ConfigError&) {
            continue;
        }
        const OnnxTensor input = readTensorProtoFile((folder / "test_data_set_0/input_0.pb").string());
        if (input.floats.empty() || input.floats.size() > 4096)
            continue; // an integer input has no gradient
        // Central differences in fp32 resolve nothing at magnitudes like the large-number tests'.
        if (std::any_of(input.floats.begin(), input.floats.end(), [](float v) { return std::abs(v) > 100.0f; }))
            continue;
        const double error =
            inputGradientError(*compiled.graph, *backend, Tensor::fromFloats(Shape(input.shape), input.floats));
        EXPECT_LE(error, kTolerance) << folder.filename().string();
        worst = std::max(worst, error);
        ++checked;
        std::printf("  %s: %g\n", folder.filename().string().c_str(), error);
    }
    std::printf("%d node tests' gradients checked, largest error %g\n", checked, worst);
    EXPECT_GT(checked, 20);
}

// x op c, x op x and x op p for every binary kind: a computed value broadcast against a
// constant, against itself, and against a trainable parameter whose gradient sums over the
// batch and the broadcast rows.
TEST(OnnxOpGradients, BinaryArithmeticOfEveryOperandKindMatchesCentralDifferences)
{
    auto backend = makeCpuBackend(1);
    double worst = 0;
    const auto check = [&](double error) {
        worst = std::max(worst, error);
        return error;
    };
    const std::vector<std::int64_t> expanded{1, 1, 3, 4}; // a batch-first [N, 3, 4]: outer, inner, 3, 4
    const Shape perSample({3, 4});
    const std::vector<std::int64_t> own{1, 1, 3, 4}, row{0, 0, 0, 1}, value{0, 0, 4, 1};
    // Positive values, so that Pow and Div stay smooth.
    std::vector<float> xs = pattern(24, 0.1f);
    for (float& v : xs)
        v = 1.5f + 0.5f * v;
    const Tensor x = Tensor::fromFloats({2, 3, 4}, xs);
    for (ElementwiseKind kind : {ElementwiseKind::Add, ElementwiseKind::Sub, ElementwiseKind::Mul, ElementwiseKind::Div,
                                 ElementwiseKind::Pow}) {
        ElementwiseOperand computed{ElementwiseOperand::Source::Value, {}, nullptr, 12, value};
        ElementwiseOperand constant{ElementwiseOperand::Source::Constant, {0.5f, 1.25f, 2.0f, 0.75f}, nullptr, 4, row};
        // x op c
        {
            Graph graph(perSample);
            graph.beginGroup("op", DType::F32);
            graph.setOutput(graph.addNode1(std::make_unique<ElementwiseOp>("op", kind, DType::F32, expanded, perSample,
                                                                           std::vector{computed, constant},
                                                                           std::vector<Shape>{perSample}),
                                           {graph.input()}));
            EXPECT_LE(check(inputGradientError(graph, *backend, x)), kTolerance)
                << "constant operand, kind " << int(kind);
        }
        // x op x: both operands' gradients reach x.
        {
            Graph graph(perSample);
            graph.beginGroup("op", DType::F32);
            graph.setOutput(graph.addNode1(std::make_unique<ElementwiseOp>("op", kind, DType::F32, expanded, perSample,
                                                                           std::vector{computed, computed},
                                                                           std::vector<Shape>{perSample, perSample}),
                                           {graph.input(), graph.input()}));
            EXPECT_LE(check(inputGradientError(graph, *backend, x)), kTolerance)
                << "the value twice, kind " << int(kind);
        }
        // p op x: the parameter's gradient, summed over the batch and the rows.
        {
            ParameterHolder holder({Shape({4})});
            holder.applyPrecision(PrecisionPolicy(PrecisionMode::Fp32), PrecisionPolicy(PrecisionMode::Fp32).layer());
            holder.createParameters(*backend, DType::F32, 0);
            Parameter& p = *holder.parameter(0);
            std::vector<float> ps{0.5f, 1.25f, 2.0f, 0.75f};
            backend->upload(ps.data(), p.master);
            ElementwiseOperand parameter{ElementwiseOperand::Source::Parameter, {}, &p, 4, row};
            Graph graph(perSample);
            graph.beginGroup("op", DType::F32);
            graph.setOutput(graph.addNode1(std::make_unique<ElementwiseOp>("op", kind, DType::F32, expanded, perSample,
                                                                           std::vector{parameter, computed},
                                                                           std::vector<Shape>{perSample}),
                                           {graph.input()}));
            EXPECT_LE(check(inputGradientError(graph, *backend, x)), kTolerance)
                << "parameter operand, kind " << int(kind);
            PassState pass{*backend};
            GraphForward forward = graph.forward(pass, x);
            const std::vector<float> dy = pattern(24, 0.3f);
            graph.backward(pass, Tensor::fromFloats({2, 3, 4}, dy), forward, false);
            const double error = differenceError(
                p.grad.toFloats(), ps, [&] { return weightedOutput(graph, *backend, x, dy); },
                [&] { backend->upload(ps.data(), p.master); });
            EXPECT_LE(check(error), kTolerance) << "parameter's gradient, kind " << int(kind);
        }
    }
    std::printf("largest error of the binary arithmetic's gradients: %g\n", worst);
}

// Where(condition, a, b) on a constant condition of one row broadcast over the rows: the
// gradient goes to the operand picked at each element, to a computed value, to a parameter (summed
// over the batch and the rows) or to both operands where both are the same computed value.
TEST(OnnxOpGradients, WhereSendsTheGradientToTheOperandItPicked)
{
    auto backend = makeCpuBackend(1);
    const std::vector<std::int64_t> expanded{1, 1, 3, 4};
    const Shape perSample({3, 4});
    const std::vector<std::int64_t> row{0, 0, 0, 1}, value{0, 0, 4, 1};
    const Tensor x = Tensor::fromFloats({2, 3, 4}, pattern(24, 0.1f));
    const ElementwiseOperand condition{ElementwiseOperand::Source::Constant, {1.0f, 0.0f, 0.0f, 1.0f}, nullptr, 4, row};
    const ElementwiseOperand computed{ElementwiseOperand::Source::Value, {}, nullptr, 12, value};
    const ElementwiseOperand fill{ElementwiseOperand::Source::Constant, {-100.0f}, nullptr, 1, {0, 0, 0, 0}};
    double worst = 0;
    const auto check = [&](double error) {
        worst = std::max(worst, error);
        return error;
    };
    // where(c, x, constant), as masked_fill exports; and where(c, x, x).
    for (const std::vector<ElementwiseOperand>& operands :
         {std::vector{condition, computed, fill}, std::vector{condition, fill, computed},
          std::vector{condition, computed, computed}}) {
        const std::size_t values =
            static_cast<std::size_t>(std::count_if(operands.begin(), operands.end(), [](const ElementwiseOperand& o) {
                return o.source == ElementwiseOperand::Source::Value;
            }));
        Graph graph(perSample);
        graph.beginGroup("where", DType::F32);
        graph.setOutput(
            graph.addNode1(std::make_unique<ElementwiseOp>("where", ElementwiseKind::Where, DType::F32, expanded,
                                                           perSample, operands, std::vector<Shape>(values, perSample)),
                           std::vector<ValueId>(values, graph.input())));
        EXPECT_LE(check(inputGradientError(graph, *backend, x)), kTolerance) << values << " computed operands";
        PassState pass{*backend};
        EXPECT_EQ(graph.forward(pass, x).output.toFloats()[1],
                  operands[2].source == ElementwiseOperand::Source::Value ? x.toFloats()[1] : -100.0f);
    }
    // where(c, p, x): the parameter's gradient is dy's sum over the batch and rows where c holds.
    ParameterHolder holder({Shape({4})});
    holder.applyPrecision(PrecisionPolicy(PrecisionMode::Fp32), PrecisionPolicy(PrecisionMode::Fp32).layer());
    holder.createParameters(*backend, DType::F32, 0);
    Parameter& p = *holder.parameter(0);
    std::vector<float> ps{0.5f, 1.25f, 2.0f, 0.75f};
    backend->upload(ps.data(), p.master);
    const ElementwiseOperand parameter{ElementwiseOperand::Source::Parameter, {}, &p, 4, row};
    Graph graph(perSample);
    graph.beginGroup("where", DType::F32);
    graph.setOutput(graph.addNode1(
        std::make_unique<ElementwiseOp>("where", ElementwiseKind::Where, DType::F32, expanded, perSample,
                                        std::vector{condition, parameter, computed}, std::vector<Shape>{perSample}),
        {graph.input()}));
    EXPECT_LE(check(inputGradientError(graph, *backend, x)), kTolerance);
    PassState pass{*backend};
    GraphForward forward = graph.forward(pass, x);
    const std::vector<float> dy = pattern(24, 0.3f);
    graph.backward(pass, Tensor::fromFloats({2, 3, 4}, dy), forward, false);
    const double error = differenceError(
        p.grad.toFloats(), ps, [&] { return weightedOutput(graph, *backend, x, dy); },
        [&] { backend->upload(ps.data(), p.master); });
    EXPECT_LE(check(error), kTolerance);
    const std::vector<float> grad = p.grad.toFloats();
    EXPECT_EQ(grad[1], 0.0f); // the condition never picks p there
    EXPECT_EQ(grad[2], 0.0f);
    std::printf("largest error of Where's gradients: %g\n", worst);
}

// A ViT's class token: Expand of a [1, 1, width] initializer over the batch, concatenated before
// each sample's patches. Every sample reads the token; its gradient sums the samples'.
TEST(OnnxOpGradients, AClassTokenConcatenatedBeforeThePatchesTrainsAsOneParameter)
{
    OnnxGraph onnx;
    onnx.path = "class_token";
    onnx.opsetVersion = 17;
    onnx.batchSize = 2;
    onnx.inputs = {"x"};
    onnx.outputs = {"y"};
    onnx.parameters.push_back({"cls", ElementType::Float32, {1, 1, 4}, {0.5f, -1.0f, 2.0f, 0.25f}, {}});
    onnx.constants.push_back({"shape", ElementType::Int64, {3}, {}, {2, 1, 4}});
    onnx.values = {{"x", ElementType::Float32, {2, 3, 4}, true, ValueKind::Input},
                   {"cls", ElementType::Float32, {1, 1, 4}, true, ValueKind::Parameter},
                   {"shape", ElementType::Int64, {3}, true, ValueKind::Constant},
                   {"expanded", ElementType::Float32, {2, 1, 4}, true, ValueKind::Activation},
                   {"y", ElementType::Float32, {2, 4, 4}, true, ValueKind::Activation}};
    OnnxNode expand{"Expand", "", "expand", {"cls", "shape"}, {"expanded"}, {}, true, 0};
    OnnxAttribute axis;
    axis.name = "axis";
    axis.i = 1;
    OnnxNode concat{"Concat", "", "concat", {"expanded", "x"}, {"y"}, {axis}, true, 0};
    onnx.nodes = {expand, concat};
    auto backend = makeCpuBackend(1);
    const CompiledOnnx compiled = compileOnnx(onnx, PrecisionPolicy(PrecisionMode::Fp32), *backend);
    const std::vector<Parameter*> parameters = compiled.graph->parametersInBackwardOrder();
    ASSERT_EQ(parameters.size(), 1u);
    Parameter& token = *parameters[0];
    EXPECT_EQ(token.name, "cls");

    const std::vector<float> xs = pattern(24, 0.1f);
    const Tensor x = Tensor::fromFloats({2, 3, 4}, xs);
    PassState pass{*backend};
    const std::vector<float> y = compiled.graph->forward(pass, x).output.toFloats();
    for (std::size_t n = 0; n < 2; ++n)
        for (std::size_t t = 0; t < 4; ++t)
            for (std::size_t w = 0; w < 4; ++w)
                EXPECT_EQ(y[(n * 4 + t) * 4 + w], t == 0 ? onnx.parameters[0].floats[w] : xs[(n * 3 + t - 1) * 4 + w]);

    EXPECT_LE(inputGradientError(*compiled.graph, *backend, x), kTolerance);
    GraphForward forward = compiled.graph->forward(pass, x);
    const std::vector<float> dy = pattern(32, 0.3f);
    compiled.graph->backward(pass, Tensor::fromFloats({2, 4, 4}, dy), forward, false);
    std::vector<float> values = token.master.toFloats();
    const double error = differenceError(
        token.grad.toFloats(), values, [&] { return weightedOutput(*compiled.graph, *backend, x, dy); },
        [&] { backend->upload(values.data(), token.master); });
    EXPECT_LE(error, kTolerance);
}

} // namespace
} // namespace mantissa::onnx_import
