#pragma once
// A layer followed by a fused activation ("activation": "relu" on a linear or conv2d
// spec). It reports the inner layer's kind so the editor shows one row per spec entry.
#include "engine/model/layers/activation_layer.h"

namespace mantissa {

class ActivatedLayer final : public Layer {
public:
    ActivatedLayer(LayerPtr inner, Activation kind);

    LayerKind kind() const override { return m_inner->kind(); }
    Shape outputShape(const Shape& input) const override { return m_inner->outputShape(input); }
    // The inner layer and the activation share the wrapper's name, dtypes and recipe.
    std::vector<Sublayer> sublayers() override { return {{m_inner.get(), ""}, {&m_activation, ""}}; }
    std::vector<Parameter*> parameters() override { return m_inner->parameters(); }
    std::vector<std::pair<std::string, Tensor*>> buffers() override { return m_inner->buffers(); }
    ForwardResult forward(PassState& pass, const Tensor& x) override;
    Tensor backward(PassState& pass, const Tensor& dy, LayerContext* context) override;
    std::int64_t parameterCount() const override { return m_inner->parameterCount(); }
    std::int64_t flopsPerSample() const override { return m_inner->flopsPerSample(); }
    Layer& inner() { return *m_inner; }

private:
    LayerPtr m_inner;
    ActivationLayer m_activation;
    // A ReLU after a linear layer or a convolution runs in the product's epilogue (the inner
    // layer's setReluAfter), with the bits of the separate ReLU: rounding to nearest keeps the
    // sign and 0, and the backward's mask, output > 0, is input > 0.
    bool m_fusedRelu = false;
};

} // namespace mantissa
