#include "engine/model/layers/activated_layer.h"

#include "engine/model/layers/conv2d.h"
#include "engine/model/layers/linear.h"

namespace mantissa {

namespace {
struct ActivatedContext final : LayerContext {
    std::unique_ptr<LayerContext> inner, activation;
    Tensor fusedOutput; // the output of a fused ReLU, whose backward masks by it
};

// Hands a ReLU to a layer that fuses it into its product's epilogue; false for other layers.
bool fuseRelu(Layer& inner)
{
    if (auto* linear = dynamic_cast<Linear*>(&inner)) {
        linear->setReluAfter(true);
        return true;
    }
    if (auto* conv = dynamic_cast<Conv2d*>(&inner)) {
        conv->setReluAfter(true);
        return true;
    }
    return false;
}
} // namespace

ActivatedLayer::ActivatedLayer(LayerPtr inner, Activation kind)
    : m_inner(std::move(inner)), m_activation(kind), m_fusedRelu(kind == Activation::Relu && fuseRelu(*m_inner))
{}

ForwardResult ActivatedLayer::forward(PassState& pass, const Tensor& x)
{
    auto context = std::make_unique<ActivatedContext>();
    ForwardResult inner = m_inner->forward(pass, x);
    context->inner = std::move(inner.context);
    if (m_fusedRelu) {
        if (pass.training)
            context->fusedOutput = inner.output;
        return {inner.output, std::move(context)};
    }
    ForwardResult activated = m_activation.forward(pass, inner.output);
    context->activation = std::move(activated.context);
    return {activated.output, std::move(context)};
}

Tensor ActivatedLayer::backward(PassState& pass, const Tensor& dy, LayerContext* context)
{
    auto& saved = static_cast<ActivatedContext&>(*context);
    Tensor dInner;
    if (m_fusedRelu) {
        // ReLU's backward reads x > 0; the output is positive exactly where x is.
        dInner = pass.backend.empty(dy.shape(), m_activation.computeType());
        pass.backend.activationBackward(Activation::Relu, saved.fusedOutput, saved.fusedOutput, dy, dInner);
    } else {
        const bool inputGradNeeded = pass.inputGradNeeded;
        pass.inputGradNeeded = true;
        dInner = m_activation.backward(pass, dy, saved.activation.get());
        pass.inputGradNeeded = inputGradNeeded;
    }
    return m_inner->backward(pass, dInner, saved.inner.get());
}

} // namespace mantissa
