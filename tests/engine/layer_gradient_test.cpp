// Every layer's backward against central finite differences of its forward, for dx and for
// every parameter. The loss is L = sum(y * r) for a fixed random r, so dL/dy = r is what
// backward receives. Shapes are small enough to perturb every value. Inputs keep clear of
// kinks (ReLU at 0, max-pool ties) by more than the step, where a difference quotient is
// meaningless.
#include "engine/model/layer_factory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace mantissa;

namespace {

enum class InputKind {
    Normal,       // standard normal
    AwayFromZero, // |x| >= 0.1: ReLU's kink is never within a step
    Distinct,     // a permutation of values 0.05 apart: max-pool windows have no near-ties
};

struct GradientCase {
    std::string name;
    LayerSpec spec;
    Shape input; // per sample
    std::int64_t batch = 3;
    InputKind inputKind = InputKind::Normal;
};

void PrintTo(const GradientCase& c, std::ostream* os) { *os << c.name; }

constexpr double kStep = 3e-3;
constexpr double kRelativeTolerance = 1e-2;
// The loss is summed in double from fp32 outputs, so the difference quotient carries about
// sqrt(n) * 2^-24 / step of rounding noise: a few 1e-4 for these shapes.
constexpr double kAbsoluteTolerance = 1e-3;

std::vector<float> makeInput(const GradientCase& c, std::int64_t n, std::mt19937& generator)
{
    std::vector<float> x(static_cast<std::size_t>(n));
    std::normal_distribution<float> normal;
    switch (c.inputKind) {
    case InputKind::Normal:
        for (float& v : x)
            v = normal(generator);
        break;
    case InputKind::AwayFromZero:
        for (float& v : x) {
            const float u = normal(generator);
            v = std::copysign(0.1f + std::abs(u), u);
        }
        break;
    case InputKind::Distinct:
        for (std::size_t i = 0; i < x.size(); ++i)
            x[i] = 0.05f * (static_cast<float>(i) - static_cast<float>(x.size()) / 2);
        std::shuffle(x.begin(), x.end(), generator);
        break;
    }
    return x;
}

class LayerGradient : public ::testing::TestWithParam<GradientCase> {
protected:
    void SetUp() override
    {
        const GradientCase& c = GetParam();
        m_backend = makeCpuBackend(2);
        m_layer = createLayer(c.spec, c.input);
        m_layer->setName("0." + m_layer->type());
        m_layer->setComputeType(DType::F32);
        m_layer->createParameters(*m_backend, DType::F32, 7);
        std::mt19937 generator(1234);
        // Move every parameter off its initial value (zero biases, unit gammas) so that no
        // term of the gradient vanishes by accident.
        std::uniform_real_distribution<float> jitter(-0.3f, 0.3f);
        for (Parameter* p : m_layer->parameters()) {
            ASSERT_EQ(p->working.dtype(), DType::F32);
            ASSERT_TRUE(p->working.sharesStorageWith(p->master));
            for (std::int64_t i = 0; i < p->working.numel(); ++i)
                p->working.f32()[i] += jitter(generator);
        }
        std::vector<std::int64_t> dims{c.batch};
        dims.insert(dims.end(), c.input.dims().begin(), c.input.dims().end());
        m_x = Tensor::fromFloats(Shape(dims), makeInput(c, Shape(dims).numel(), generator));
        const Shape outShape = m_layer->outputShape(m_x.shape());
        std::normal_distribution<float> normal;
        std::vector<float> r(static_cast<std::size_t>(outShape.numel()));
        for (float& v : r)
            v = normal(generator);
        m_r = Tensor::fromFloats(outShape, r);
    }

    PassState pass()
    {
        PassState p{*m_backend};
        p.training = true;
        p.seed = 99; // fixed seed and step: dropout draws the same mask on every forward
        p.step = 5;
        return p;
    }

    double loss()
    {
        PassState p = pass();
        const Tensor y = m_layer->forward(p, m_x).output;
        const auto values = y.toFloats();
        const auto weights = m_r.toFloats();
        double sum = 0;
        for (std::size_t i = 0; i < values.size(); ++i)
            sum += static_cast<double>(values[i]) * weights[i];
        return sum;
    }

    // Central differences of the loss with respect to every value of `t` (a host fp32 tensor
    // the forward reads), compared with `analytic`.
    void check(Tensor& t, const std::vector<float>& analytic, const std::string& what)
    {
        ASSERT_EQ(static_cast<std::int64_t>(analytic.size()), t.numel()) << what;
        int failures = 0;
        for (std::int64_t i = 0; i < t.numel() && failures < 5; ++i) {
            float& v = t.f32()[i];
            const float original = v;
            v = static_cast<float>(original + kStep);
            const double plus = loss();
            v = static_cast<float>(original - kStep);
            const double minus = loss();
            v = original;
            const double numeric = (plus - minus) / (2 * kStep);
            const double a = analytic[static_cast<std::size_t>(i)];
            const double allowed = kAbsoluteTolerance + kRelativeTolerance * std::max(std::abs(numeric), std::abs(a));
            if (!(std::abs(numeric - a) <= allowed)) {
                ADD_FAILURE() << what << "[" << i << "]: backward " << a << ", finite difference " << numeric;
                ++failures;
            }
        }
    }

    std::unique_ptr<Backend> m_backend;
    LayerPtr m_layer;
    Tensor m_x, m_r;
};

TEST_P(LayerGradient, BackwardMatchesFiniteDifferences)
{
    PassState p = pass();
    ForwardResult forward = m_layer->forward(p, m_x);
    ASSERT_EQ(forward.output.shape(), m_r.shape());
    p.inputGradNeeded = true;
    const Tensor dx = m_layer->backward(p, m_r, forward.context.get());
    ASSERT_TRUE(dx.defined());
    ASSERT_EQ(dx.shape(), m_x.shape());
    const auto dxValues = dx.toFloats();
    // Backward wrote every parameter gradient; keep copies before the checks run forwards.
    std::vector<std::pair<Parameter*, std::vector<float>>> grads;
    for (Parameter* param : m_layer->parameters())
        grads.emplace_back(param, param->grad.toFloats());

    check(m_x, dxValues, "dx");
    for (auto& [param, grad] : grads)
        check(param->working, grad, param->name);
}

LayerSpec layer(std::string type)
{
    LayerSpec spec;
    spec.type = std::move(type);
    return spec;
}

LayerSpec linear(std::int64_t units, bool bias = true, std::string activation = "")
{
    LayerSpec spec = layer("linear");
    spec.units = units;
    spec.bias = bias;
    spec.activation = std::move(activation);
    return spec;
}

LayerSpec conv(std::int64_t filters, std::int64_t kernel, std::int64_t stride, std::int64_t padding, bool bias,
               std::string activation = "")
{
    LayerSpec spec = layer("conv2d");
    spec.filters = filters;
    spec.kernel = kernel;
    spec.stride = stride;
    spec.padding = padding;
    spec.bias = bias;
    spec.activation = std::move(activation);
    return spec;
}

// stride 0: the pool's default (its kernel)
LayerSpec pool(std::string type, std::int64_t kernel, std::int64_t stride, std::int64_t padding)
{
    LayerSpec spec = layer(std::move(type));
    spec.kernel = kernel;
    spec.stride = stride;
    spec.padding = padding;
    return spec;
}

LayerSpec dropout(float rate)
{
    LayerSpec spec = layer("dropout");
    spec.rate = rate;
    return spec;
}

LayerSpec residual(std::string shortcut, std::vector<LayerSpec> body)
{
    LayerSpec spec = layer("residual");
    spec.shortcut = std::move(shortcut);
    spec.body = std::move(body);
    return spec;
}

const GradientCase kCases[] = {
    {"linear", linear(5), {4}},
    {"linearNoBias", linear(5, false), {4}},
    {"linearRelu", linear(6, true, "relu"), {5}, 4},
    {"relu", layer("relu"), {7}, 3, InputKind::AwayFromZero},
    {"gelu", layer("gelu"), {7}},
    {"tanh", layer("tanh"), {7}},
    {"sigmoid", layer("sigmoid"), {7}},
    {"flatten", layer("flatten"), {2, 3, 3}},
    {"conv3x3Stride1Pad1Bias", conv(4, 3, 1, 1, true), {3, 5, 5}, 2},
    {"conv3x3Stride1Pad0NoBias", conv(4, 3, 1, 0, false), {3, 5, 6}, 2},
    {"conv3x3Stride2Pad1Bias", conv(3, 3, 2, 1, true), {2, 7, 6}, 2},
    {"conv2x2Stride2Pad0NoBias", conv(3, 2, 2, 0, false), {2, 6, 6}, 2},
    {"conv3x3Tanh", conv(3, 3, 1, 1, true, "tanh"), {2, 4, 4}, 2},
    {"batchnorm2d", layer("batchnorm"), {4}, 6},
    {"batchnorm4d", layer("batchnorm"), {2, 3, 3}, 3},
    {"maxpool2x2", pool("maxpool", 2, 0, 0), {2, 4, 6}, 2, InputKind::Distinct},
    {"maxpool3x3Stride2Pad1", pool("maxpool", 3, 2, 1), {2, 5, 5}, 2, InputKind::Distinct},
    {"avgpool2x2", pool("avgpool", 2, 0, 0), {2, 4, 4}, 2},
    {"avgpool3x3Stride2Pad1", pool("avgpool", 3, 2, 1), {2, 5, 6}, 2},
    {"dropout", dropout(0.5f), {12}, 4},
    {"residualIdentity", residual("identity", {conv(3, 3, 1, 1, true, "tanh"), conv(3, 3, 1, 1, false)}),
     {3, 4, 4}, 2},
    {"residualProjectionConv", residual("projection", {conv(4, 3, 2, 1, true, "tanh")}), {2, 6, 6}, 2},
    {"residualProjectionLinear",
     residual("projection", {linear(5, true, "tanh"), layer("batchnorm")}), {4}, 5},
};

INSTANTIATE_TEST_SUITE_P(Layers, LayerGradient, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<GradientCase>& info) { return info.param.name; });

} // namespace
