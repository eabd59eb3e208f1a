#include "engine/model/layers/activation_layer.h"

namespace mantissa {

namespace {
struct ActivationContext final : LayerContext {
    Tensor input, output;
};
} // namespace

std::optional<Activation> parseActivation(const std::string& name)
{
    if (name == "relu") return Activation::Relu;
    if (name == "gelu") return Activation::Gelu;
    if (name == "tanh") return Activation::Tanh;
    if (name == "sigmoid") return Activation::Sigmoid;
    return std::nullopt;
}

std::string activationName(Activation kind)
{
    switch (kind) {
    case Activation::Relu: return "relu";
    case Activation::Gelu: return "gelu";
    case Activation::Tanh: return "tanh";
    case Activation::Sigmoid: return "sigmoid";
    }
    return "?";
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
