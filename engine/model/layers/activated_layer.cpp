#include "engine/model/layers/activated_layer.h"

namespace mantissa {

namespace {
struct ActivatedContext final : LayerContext {
    std::unique_ptr<LayerContext> inner, activation;
};
} // namespace

ActivatedLayer::ActivatedLayer(LayerPtr inner, Activation kind) : m_inner(std::move(inner)), m_activation(kind) {}

ForwardResult ActivatedLayer::forward(PassState& pass, const Tensor& x)
{
    auto context = std::make_unique<ActivatedContext>();
    ForwardResult inner = m_inner->forward(pass, x);
    context->inner = std::move(inner.context);
    ForwardResult activated = m_activation.forward(pass, inner.output);
    context->activation = std::move(activated.context);
    return {activated.output, std::move(context)};
}

Tensor ActivatedLayer::backward(PassState& pass, const Tensor& dy, LayerContext* context)
{
    auto& saved = static_cast<ActivatedContext&>(*context);
    const bool inputGradNeeded = pass.inputGradNeeded;
    pass.inputGradNeeded = true;
    Tensor dInner = m_activation.backward(pass, dy, saved.activation.get());
    pass.inputGradNeeded = inputGradNeeded;
    return m_inner->backward(pass, dInner, saved.inner.get());
}

} // namespace mantissa
