#include "engine/model/layer_factory.h"

#include "engine/model/layers/activated_layer.h"
#include "engine/model/layers/flatten.h"
#include "engine/model/layers/linear.h"
#include "engine/util/check.h"

#include <vector>

namespace mantissa {

namespace {

// Applies the optional fused activation of a linear or conv2d spec.
LayerPtr wrapActivation(LayerPtr layer, const LayerSpec& spec)
{
    if (spec.activation.empty() || spec.activation == "none")
        return layer;
    const auto kind = parseActivation(spec.activation);
    if (!kind)
        throw ConfigError("activation \"" + spec.activation + "\" is unknown; expected relu, gelu, tanh, sigmoid or none");
    return std::make_unique<ActivatedLayer>(std::move(layer), *kind);
}

LayerPtr createLinear(const LayerSpec& spec, const Shape& in)
{
    if (spec.units <= 0)
        throw ConfigError("units must be positive (got " + std::to_string(spec.units) + ")");
    if (in.rank() != 1)
        throw ConfigError("expects a flat vector of features but receives " + in.toString() +
                          "; add a flatten layer before it");
    if (spec.inputs > 0 && spec.inputs != in[0])
        throw ConfigError("expects " + std::to_string(spec.inputs) + " inputs, receives " + std::to_string(in[0]) +
                          "; did the pooling change?");
    const bool xavier = spec.activation == "tanh" || spec.activation == "sigmoid";
    return wrapActivation(std::make_unique<Linear>(in[0], spec.units, spec.bias, spec.init, xavier), spec);
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
    if (spec.type == "linear")
        return createLinear(spec, in);
    if (spec.type == "flatten")
        return std::make_unique<Flatten>();
    if (auto kind = parseActivation(spec.type))
        return std::make_unique<ActivationLayer>(*kind);
    throw ConfigError("unknown layer type \"" + spec.type +
                      "\"; expected linear, conv2d, batchnorm, relu, gelu, tanh, sigmoid, maxpool, avgpool, "
                      "dropout, flatten or residual");
}

} // namespace mantissa
