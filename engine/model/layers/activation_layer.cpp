#include "engine/model/layers/activation_layer.h"

#include <array>

namespace mantissa {

namespace {
struct ActivationContext final : LayerContext {
    Tensor input, output;
};

constexpr std::array kActivations{
    EnumEntry<Activation>{Activation::Relu, "relu", "ReLU", "max(0, x)."},
    EnumEntry<Activation>{Activation::Gelu, "gelu", "GELU",
                          "x times the normal CDF of x (the exact erf form, as PyTorch)."},
    EnumEntry<Activation>{Activation::Tanh, "tanh", "tanh", "Hyperbolic tangent."},
    EnumEntry<Activation>{Activation::Sigmoid, "sigmoid", "sigmoid", "1 / (1 + e^-x)."},
};
} // namespace

template <>
std::span<const EnumEntry<Activation>> enumEntries<Activation>()
{
    return kActivations;
}

std::optional<Activation> parseActivation(const std::string& name) { return parseEnum<Activation>(name); }

LayerKind ActivationLayer::kind() const
{
    switch (m_kind) {
    case Activation::Relu: return LayerKind::Relu;
    case Activation::Gelu: return LayerKind::Gelu;
    case Activation::Tanh: return LayerKind::Tanh;
    case Activation::Sigmoid: return LayerKind::Sigmoid;
    }
    assertionFailed("Activation without a LayerKind", __FILE__, __LINE__);
}

ForwardResult ActivationLayer::forward(PassState& pass, const Tensor& x)
{
    Tensor y = pass.backend.empty(x.shape(), computeType());
    pass.backend.activationForward(m_kind, x, y);
    auto context = std::make_unique<ActivationContext>();
    if (pass.training) {
        context->input = x;
        context->output = y;
    }
    return {y, std::move(context)};
}

Tensor ActivationLayer::backward(PassState& pass, const Tensor& dy, LayerContext* context)
{
    auto& saved = static_cast<ActivationContext&>(*context);
    Tensor dx = pass.backend.empty(dy.shape(), computeType());
    pass.backend.activationBackward(m_kind, saved.input, saved.output, dy, dx);
    return dx;
}

} // namespace mantissa
