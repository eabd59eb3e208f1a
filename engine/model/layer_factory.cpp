#include "engine/model/layer_factory.h"

#include "engine/model/layers/activated_layer.h"
#include "engine/model/layers/batch_norm.h"
#include "engine/model/layers/conv2d.h"
#include "engine/model/layers/dropout.h"
#include "engine/model/layers/flatten.h"
#include "engine/model/layers/linear.h"
#include "engine/model/layers/pool2d.h"
#include "engine/model/layers/residual.h"
#include "engine/model/transformer_factory.h"
#include "engine/util/check.h"

#include <optional>
#include <sstream>
#include <vector>

namespace mantissa {

namespace {

// Applies the optional fused activation of a linear or conv2d spec.
LayerPtr wrapActivation(LayerPtr layer, const LayerSpec& spec)
{
    if (!spec.activation)
        return layer;
    return std::make_unique<ActivatedLayer>(std::move(layer), *spec.activation);
}

LayerPtr createLinear(const LayerSpec& spec, const Shape& in)
{
    if (spec.units <= 0)
        throw ConfigError("units must be positive (got " + std::to_string(spec.units) + ")");
    // [features], or [tokens, features] (each token through the same weights, as in a
    // transformer's output head).
    if (in.rank() != 1 && in.rank() != 2)
        throw ConfigError("expects a flat vector of features but receives " + in.toString() +
                          "; add a flatten layer before it");
    const std::int64_t features = in.dims().back();
    if (spec.inputs > 0 && spec.inputs != features)
        throw ConfigError("expects " + std::to_string(spec.inputs) + " inputs, receives " + std::to_string(features) +
                          "; did the pooling change?");
    const bool xavier = spec.activation == Activation::Tanh || spec.activation == Activation::Sigmoid;
    const std::int64_t tokens = in.rank() == 2 ? in[0] : 1;
    auto linear = std::make_unique<Linear>(features, spec.units, spec.bias, spec.init, xavier, tokens);
    linear->setSharesTable(spec.tied); // the model ties it to the embedding (model_validation.cpp checks)
    return wrapActivation(std::move(linear), spec);
}

std::string number(std::int64_t v) { return std::to_string(v); }

// 1.5 rather than std::to_string's 1.500000
std::string number(float v)
{
    std::ostringstream out;
    out << v;
    return out.str();
}

// "28x28": the spatial extent of a per-sample image shape.
std::string spatial(const Shape& image) { return number(image[1]) + "x" + number(image[2]); }

void requireImage(const Shape& in)
{
    if (in.rank() != 3)
        throw ConfigError("expects an image [channels, height, width] but receives " + in.toString() +
                          (in.rank() == 1 ? "; place it before the flatten layer" : ""));
}

// Kernel, stride and padding of a sliding window; returns the stride with 0 resolved to
// `defaultStride`.
std::int64_t checkWindow(const LayerSpec& spec, std::int64_t defaultStride)
{
    if (spec.kernel <= 0)
        throw ConfigError("kernel must be positive (got " + number(spec.kernel) + ")");
    if (spec.stride < 0)
        throw ConfigError("stride must be positive, or 0 for the default (got " + number(spec.stride) + ")");
    if (spec.padding < 0)
        throw ConfigError("padding must not be negative (got " + number(spec.padding) + ")");
    return spec.stride == 0 ? defaultStride : spec.stride;
}

bool windowFits(const Shape& image, std::int64_t kernel, std::int64_t padding)
{
    return image[1] + 2 * padding >= kernel && image[2] + 2 * padding >= kernel;
}

LayerPtr createConv2d(const LayerSpec& spec, const Shape& in)
{
    if (spec.filters <= 0)
        throw ConfigError("filters must be positive (got " + number(spec.filters) + ")");
    requireImage(in);
    const std::int64_t stride = checkWindow(spec, 1);
    if (!windowFits(in, spec.kernel, spec.padding))
        throw ConfigError("kernel " + number(spec.kernel) + " does not fit a " + spatial(in) + " input with padding " +
                          number(spec.padding) + "; use a smaller kernel or more padding");
    const bool xavier = spec.activation == Activation::Tanh || spec.activation == Activation::Sigmoid;
    return wrapActivation(
        std::make_unique<Conv2d>(in, spec.filters, spec.kernel, stride, spec.padding, spec.bias, spec.init, xavier),
        spec);
}

// Pools default to non-overlapping windows (stride = kernel), as PyTorch and Keras do, so
// {"type": "maxpool", "kernel": 2} halves the image.
LayerPtr createPool(PoolKind kind, const LayerSpec& spec, const Shape& in)
{
    requireImage(in);
    const std::int64_t stride = checkWindow(spec, spec.kernel);
    // The PyTorch rule: a window could otherwise lie entirely in the padding (max of nothing,
    // average over zero inputs).
    if (2 * spec.padding > spec.kernel)
        throw ConfigError("padding " + number(spec.padding) + " is more than half the kernel " + number(spec.kernel) +
                          "; a window could hold nothing but padding");
    if (!windowFits(in, spec.kernel, spec.padding))
        throw ConfigError("kernel " + number(spec.kernel) + " leaves no output (output size 0) for a " + spatial(in) +
                          " input with padding " + number(spec.padding) +
                          "; use a smaller kernel or remove a pooling layer");
    return std::make_unique<Pool2d>(kind, in, spec.kernel, stride, spec.padding);
}

LayerPtr createBatchNorm(const LayerSpec& spec, const Shape& in)
{
    if (in.rank() != 1 && in.rank() != 3)
        throw ConfigError("expects [channels] or [channels, height, width] but receives " + in.toString());
    if (!(spec.momentum >= 0.0f && spec.momentum <= 1.0f))
        throw ConfigError("momentum must be in [0, 1] (got " + number(spec.momentum) + ")");
    if (!(spec.epsilon > 0.0f))
        throw ConfigError("epsilon must be positive (got " + number(spec.epsilon) + ")");
    return std::make_unique<BatchNorm>(in, spec.momentum, spec.epsilon);
}

LayerPtr createDropout(const LayerSpec& spec, const Shape& in)
{
    if (!(spec.rate >= 0.0f && spec.rate < 1.0f))
        throw ConfigError("rate must be in [0, 1) (got " + number(spec.rate) +
                          "); it is the probability of dropping a value");
    return std::make_unique<Dropout>(spec.rate, in.numel());
}

// The layer that maps the block's input to the body's output shape (of the same rank) on the
// shortcut path. It has no bias: the body's output already carries one, or a batch norm.
LayerPtr createProjection(const Shape& in, const Shape& out)
{
    if (in.rank() == 1)
        return std::make_unique<Linear>(in[0], out[0], false, "", false);
    // A 1x1 convolution with stride s maps an extent e to (e - 1) / s + 1.
    for (std::int64_t s = 1; s <= std::max(in[1], in[2]); ++s)
        if ((in[1] - 1) / s + 1 == out[1] && (in[2] - 1) / s + 1 == out[2])
            return std::make_unique<Conv2d>(in, out[0], 1, s, 0, false, "", false);
    throw ConfigError("no strided 1x1 projection maps " + in.toString() + " to " + out.toString() +
                      "; make the body downsample by a whole stride");
}

LayerPtr createResidual(const LayerSpec& spec, const Shape& in)
{
    if (spec.body.empty())
        throw ConfigError("has no layers; list the residual branch under \"layers\"");
    std::vector<LayerPtr> body;
    std::vector<LayerFormat> overrides;
    Shape shape = in;
    for (std::size_t i = 0; i < spec.body.size(); ++i) {
        const LayerSpec& child = spec.body[i];
        try {
            body.push_back(createLayer(child, shape));
        } catch (const ConfigError& e) {
            throw ConfigError("body layer " + std::to_string(i) + " (" + std::string(enumKey(child.type)) +
                              "): " + e.what());
        }
        shape = perSampleOutput(*body.back(), shape);
        overrides.push_back(child.precision);
    }
    if (shape.rank() != in.rank())
        throw ConfigError("the body turns " + in.toString() + " into " + shape.toString() +
                          "; a residual body must keep images as images (flatten after the block)");
    LayerPtr projection;
    switch (spec.shortcut) {
    case ShortcutKind::Identity:
        if (shape != in)
            throw ConfigError("the body maps " + in.toString() + " to " + shape.toString() +
                              " but an identity shortcut needs equal shapes; use \"shortcut\": \"projection\"");
        break;
    case ShortcutKind::Projection: projection = createProjection(in, shape); break;
    }
    return std::make_unique<Residual>(std::move(body), std::move(overrides), std::move(projection), in, shape);
}

} // namespace

Shape perSampleOutput(const Layer& layer, const Shape& inputPerSample)
{
    std::vector<std::int64_t> dims{1};
    dims.insert(dims.end(), inputPerSample.dims().begin(), inputPerSample.dims().end());
    const Shape out = layer.outputShape(Shape(dims));
    return Shape(std::vector<std::int64_t>(out.dims().begin() + 1, out.dims().end()));
}

LayerPtr createLayer(const LayerSpec& spec, const Shape& in)
{
    switch (spec.type) {
    case LayerKind::Linear: return createLinear(spec, in);
    case LayerKind::Conv2d: return createConv2d(spec, in);
    case LayerKind::BatchNorm: return createBatchNorm(spec, in);
    case LayerKind::Relu: return std::make_unique<ActivationLayer>(Activation::Relu);
    case LayerKind::Gelu: return std::make_unique<ActivationLayer>(Activation::Gelu);
    case LayerKind::Tanh: return std::make_unique<ActivationLayer>(Activation::Tanh);
    case LayerKind::Sigmoid: return std::make_unique<ActivationLayer>(Activation::Sigmoid);
    case LayerKind::MaxPool: return createPool(PoolKind::Max, spec, in);
    case LayerKind::AvgPool: return createPool(PoolKind::Avg, spec, in);
    case LayerKind::Dropout: return createDropout(spec, in);
    case LayerKind::Flatten: return std::make_unique<Flatten>();
    case LayerKind::Residual: return createResidual(spec, in);
    case LayerKind::LayerNorm:
    case LayerKind::RmsNorm: return createRowNorm(spec, in);
    case LayerKind::TokenEmbedding: return createTokenEmbedding(spec, in);
    case LayerKind::PositionalEmbedding: return createPositionalEmbedding(spec, in);
    case LayerKind::PatchEmbedding: return createPatchEmbedding(spec, in);
    case LayerKind::Attention: return createAttention(spec, in);
    case LayerKind::Mlp: return createMlp(spec, in);
    case LayerKind::Transformer: return createTransformer(spec, in);
    }
    assertionFailed("LayerKind missing from createLayer", __FILE__, __LINE__);
}

} // namespace mantissa
