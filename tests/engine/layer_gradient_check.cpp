// The loss is L = sum(y * r) for a fixed random r, so dL/dy = r is what backward receives.
// Shapes are small enough to perturb every value. Inputs keep clear of kinks (ReLU at 0,
// max-pool ties) by more than the step, where a difference quotient is meaningless.
// Tensors live on the backend's device: every perturbation is uploaded and every output
// downloaded, so the same check serves the CPU and a GPU.
#include "layer_gradient_check.h"

#include "engine/model/layer_factory.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace mantissa::test {

void PrintTo(const GradientCase& c, std::ostream* os) { *os << c.name; }

namespace {

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
    case InputKind::TokenIds: {
        std::uniform_int_distribution<std::int64_t> token(0, c.spec.vocabulary - 1);
        for (float& v : x)
            v = static_cast<float>(token(generator));
        break;
    }
    case InputKind::Distinct:
        for (std::size_t i = 0; i < x.size(); ++i)
            x[i] = 0.05f * (static_cast<float>(i) - static_cast<float>(x.size()) / 2);
        std::shuffle(x.begin(), x.end(), generator);
        break;
    }
    return x;
}

class GradientCheck {
public:
    GradientCheck(Backend& backend, const GradientCase& c) : m_backend(backend), m_case(c) {}

    void run()
    {
        setUp();
        if (::testing::Test::HasFatalFailure())
            return;
        PassState p = pass();
        ForwardResult forward = m_layer->forward(p, m_x);
        ASSERT_EQ(forward.output.shape(), m_rShape);
        // Token ids have no gradient: an embedding's backward writes its table's only.
        const bool ids = m_case.inputKind == InputKind::TokenIds;
        p.inputGradNeeded = !ids;
        const Tensor dx = m_layer->backward(p, m_r, forward.context.get());
        std::vector<float> dxValues;
        if (!ids) {
            ASSERT_TRUE(dx.defined());
            ASSERT_EQ(dx.shape(), m_x.shape());
            dxValues = download(dx);
        }
        // Backward wrote every parameter gradient; keep copies before the checks run forwards.
        std::vector<std::pair<Parameter*, std::vector<float>>> grads;
        for (Parameter* param : m_layer->parameters())
            grads.emplace_back(param, download(param->grad));

        if (!ids)
            check(m_x, dxValues, "dx");
        for (auto& [param, grad] : grads)
            check(param->working, grad, param->name);
    }

private:
    void setUp()
    {
        m_layer = createLayer(m_case.spec, m_case.input);
        m_layer->setName("0." + std::string(enumKey(m_layer->kind())));
        const PrecisionPolicy fp32(PrecisionMode::Fp32);
        m_layer->applyPrecision(fp32, fp32.layer());
        m_layer->createParameters(m_backend, DType::F32, 7);
        std::mt19937 generator(1234);
        // Move every parameter off its initial value (zero biases, unit gammas) so that no
        // term of the gradient vanishes by accident.
        std::uniform_real_distribution<float> jitter(-0.3f, 0.3f);
        for (Parameter* p : m_layer->parameters()) {
            ASSERT_EQ(p->working.dtype(), DType::F32);
            ASSERT_TRUE(p->working.sharesStorageWith(p->master));
            std::vector<float> values = download(p->working);
            for (float& v : values)
                v += jitter(generator);
            m_backend.upload(values.data(), p->working);
        }
        std::vector<std::int64_t> dims{m_case.batch};
        dims.insert(dims.end(), m_case.input.dims().begin(), m_case.input.dims().end());
        m_x = m_backend.empty(Shape(dims), DType::F32);
        const std::vector<float> x = makeInput(m_case, m_x.numel(), generator);
        m_backend.upload(x.data(), m_x);
        m_rShape = m_layer->outputShape(m_x.shape());
        std::normal_distribution<float> normal;
        m_rHost.resize(static_cast<std::size_t>(m_rShape.numel()));
        for (float& v : m_rHost)
            v = normal(generator);
        m_r = m_backend.empty(m_rShape, DType::F32);
        m_backend.upload(m_rHost.data(), m_r);
    }

    PassState pass()
    {
        PassState p{m_backend};
        p.training = true;
        p.seed = 99; // fixed seed and step: dropout draws the same mask on every forward
        p.step = 5;
        return p;
    }

    std::vector<float> download(const Tensor& t)
    {
        std::vector<float> values(static_cast<std::size_t>(t.numel()));
        m_backend.download(t, values.data());
        return values;
    }

    double loss()
    {
        PassState p = pass();
        const auto values = download(m_layer->forward(p, m_x).output);
        double sum = 0;
        for (std::size_t i = 0; i < values.size(); ++i)
            sum += static_cast<double>(values[i]) * m_rHost[i];
        return sum;
    }

    // Central differences of the loss with respect to every value of `t` (an fp32 tensor the
    // forward reads), compared with `analytic`.
    void check(Tensor& t, const std::vector<float>& analytic, const std::string& what)
    {
        ASSERT_EQ(static_cast<std::int64_t>(analytic.size()), t.numel()) << what;
        std::vector<float> values = download(t);
        int failures = 0;
        for (std::size_t i = 0; i < values.size() && failures < 5; ++i) {
            const float original = values[i];
            values[i] = static_cast<float>(original + kStep);
            m_backend.upload(values.data(), t);
            const double plus = loss();
            values[i] = static_cast<float>(original - kStep);
            m_backend.upload(values.data(), t);
            const double minus = loss();
            values[i] = original;
            m_backend.upload(values.data(), t);
            const double numeric = (plus - minus) / (2 * kStep);
            const double a = analytic[i];
            const double allowed = kAbsoluteTolerance + kRelativeTolerance * std::max(std::abs(numeric), std::abs(a));
            if (!(std::abs(numeric - a) <= allowed)) {
                ADD_FAILURE() << what << "[" << i << "]: backward " << a << ", finite difference " << numeric;
                ++failures;
            }
        }
    }

    Backend& m_backend;
    const GradientCase& m_case;
    LayerPtr m_layer;
    Tensor m_x, m_r;
    Shape m_rShape;
    std::vector<float> m_rHost;
};

LayerSpec layer(LayerKind type)
{
    LayerSpec spec;
    spec.type = type;
    return spec;
}

LayerSpec linear(std::int64_t units, bool bias = true, std::optional<Activation> activation = {})
{
    LayerSpec spec = layer(LayerKind::Linear);
    spec.units = units;
    spec.bias = bias;
    spec.activation = activation;
    return spec;
}

LayerSpec conv(std::int64_t filters, std::int64_t kernel, std::int64_t stride, std::int64_t padding, bool bias,
               std::optional<Activation> activation = {})
{
    LayerSpec spec = layer(LayerKind::Conv2d);
    spec.filters = filters;
    spec.kernel = kernel;
    spec.stride = stride;
    spec.padding = padding;
    spec.bias = bias;
    spec.activation = activation;
    return spec;
}

// stride 0: the pool's default (its kernel)
LayerSpec pool(LayerKind type, std::int64_t kernel, std::int64_t stride, std::int64_t padding)
{
    LayerSpec spec = layer(type);
    spec.kernel = kernel;
    spec.stride = stride;
    spec.padding = padding;
    return spec;
}

LayerSpec dropout(float rate)
{
    LayerSpec spec = layer(LayerKind::Dropout);
    spec.rate = rate;
    return spec;
}

LayerSpec residual(ShortcutKind shortcut, std::vector<LayerSpec> body)
{
    LayerSpec spec = layer(LayerKind::Residual);
    spec.shortcut = shortcut;
    spec.body = std::move(body);
    return spec;
}

LayerSpec norm(LayerKind type, bool bias = true)
{
    LayerSpec spec = layer(type);
    spec.bias = bias;
    return spec;
}

LayerSpec tokenEmbedding(std::int64_t vocabulary, std::int64_t width)
{
    LayerSpec spec = layer(LayerKind::TokenEmbedding);
    spec.vocabulary = vocabulary;
    spec.units = width;
    return spec;
}

LayerSpec positions(std::int64_t length)
{
    LayerSpec spec = layer(LayerKind::PositionalEmbedding);
    spec.length = length;
    return spec;
}

LayerSpec patches(std::int64_t width, std::int64_t patch)
{
    LayerSpec spec = layer(LayerKind::PatchEmbedding);
    spec.units = width;
    spec.kernel = patch;
    return spec;
}

LayerSpec attention(std::int64_t heads, bool causal, float dropout = 0)
{
    LayerSpec spec = layer(LayerKind::Attention);
    spec.heads = heads;
    spec.causal = causal;
    spec.attentionDropout = dropout;
    return spec;
}

LayerSpec mlp(std::int64_t hidden)
{
    LayerSpec spec = layer(LayerKind::Mlp);
    spec.units = hidden;
    return spec;
}

LayerSpec transformer(std::int64_t heads, bool causal, NormKind normKind)
{
    LayerSpec spec = layer(LayerKind::Transformer);
    spec.heads = heads;
    spec.causal = causal;
    spec.norm = normKind;
    spec.units = 6;
    return spec;
}

} // namespace

const std::vector<GradientCase>& transformerGradientCases()
{
    static const std::vector<GradientCase> cases{
        {"linearOverTokens", linear(5), {3, 4}, 2},
        {"layernormTokens", norm(LayerKind::LayerNorm), {3, 6}, 2},
        {"layernormNoBias", norm(LayerKind::LayerNorm, false), {5}, 3},
        {"rmsnormTokens", norm(LayerKind::RmsNorm), {3, 6}, 2},
        {"tokenEmbedding", tokenEmbedding(7, 4), {5}, 3, InputKind::TokenIds},
        {"positionalEmbedding", positions(0), {4, 3}, 2},
        {"positionalEmbeddingLongerTable", positions(6), {4, 3}, 2},
        {"patchEmbedding", patches(5, 2), {2, 4, 6}, 2},
        {"attention", attention(2, false), {3, 4}, 2},
        {"attentionCausal", attention(2, true), {4, 4}, 2},
        {"attentionOneHeadDropout", attention(1, false, 0.3f), {3, 4}, 2},
        {"mlp", mlp(7), {3, 4}, 2},
        {"transformerLayerNorm", transformer(2, false, NormKind::LayerNorm), {3, 4}, 2},
        {"transformerRmsNormCausal", transformer(2, true, NormKind::RmsNorm), {3, 4}, 2},
    };
    return cases;
}

void checkLayerGradients(Backend& backend, const GradientCase& c) { GradientCheck(backend, c).run(); }

const std::vector<GradientCase>& layerGradientCases()
{
    static const std::vector<GradientCase> cases{
        {"linear", linear(5), {4}},
        {"linearNoBias", linear(5, false), {4}},
        {"linearRelu", linear(6, true, Activation::Relu), {5}, 4},
        {"relu", layer(LayerKind::Relu), {7}, 3, InputKind::AwayFromZero},
        {"gelu", layer(LayerKind::Gelu), {7}},
        {"tanh", layer(LayerKind::Tanh), {7}},
        {"sigmoid", layer(LayerKind::Sigmoid), {7}},
        {"flatten", layer(LayerKind::Flatten), {2, 3, 3}},
        {"conv3x3Stride1Pad1Bias", conv(4, 3, 1, 1, true), {3, 5, 5}, 2},
        {"conv3x3Stride1Pad0NoBias", conv(4, 3, 1, 0, false), {3, 5, 6}, 2},
        {"conv3x3Stride2Pad1Bias", conv(3, 3, 2, 1, true), {2, 7, 6}, 2},
        {"conv2x2Stride2Pad0NoBias", conv(3, 2, 2, 0, false), {2, 6, 6}, 2},
        {"conv3x3Tanh", conv(3, 3, 1, 1, true, Activation::Tanh), {2, 4, 4}, 2},
        {"batchnorm2d", layer(LayerKind::BatchNorm), {4}, 6},
        {"batchnorm4d", layer(LayerKind::BatchNorm), {2, 3, 3}, 3},
        {"maxpool2x2", pool(LayerKind::MaxPool, 2, 0, 0), {2, 4, 6}, 2, InputKind::Distinct},
        {"maxpool3x3Stride2Pad1", pool(LayerKind::MaxPool, 3, 2, 1), {2, 5, 5}, 2, InputKind::Distinct},
        {"avgpool2x2", pool(LayerKind::AvgPool, 2, 0, 0), {2, 4, 4}, 2},
        {"avgpool3x3Stride2Pad1", pool(LayerKind::AvgPool, 3, 2, 1), {2, 5, 6}, 2},
        {"dropout", dropout(0.5f), {12}, 4},
        {"residualIdentity",
         residual(ShortcutKind::Identity, {conv(3, 3, 1, 1, true, Activation::Tanh), conv(3, 3, 1, 1, false)}),
         {3, 4, 4},
         2},
        {"residualProjectionConv",
         residual(ShortcutKind::Projection, {conv(4, 3, 2, 1, true, Activation::Tanh)}),
         {2, 6, 6},
         2},
        {"residualProjectionLinear",
         residual(ShortcutKind::Projection, {linear(5, true, Activation::Tanh), layer(LayerKind::BatchNorm)}),
         {4},
         5},
    };
    return cases;
}

} // namespace mantissa::test
