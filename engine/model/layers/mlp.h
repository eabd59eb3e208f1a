#pragma once
// The transformer's MLP block over [N, T, width] (or [N, width]): linear to `hidden` features,
// GELU (the exact erf form), linear back to `width`.
#include "engine/model/layers/activated_layer.h"
#include "engine/model/layers/linear.h"

namespace mantissa {

class Mlp final : public Layer {
public:
    Mlp(std::int64_t width, std::int64_t hidden, std::int64_t tokens, bool bias);

    LayerKind kind() const override { return LayerKind::Mlp; }
    Shape outputShape(const Shape& input) const override { return input; }
    std::vector<Sublayer> sublayers() override { return {{&m_up, "up"}, {&m_down, "down"}}; }
    // In the order backward writes them: the down projection, then the up projection.
    std::vector<Parameter*> parameters() override;
    ForwardResult forward(PassState& pass, const Tensor& x) override;
    Tensor backward(PassState& pass, const Tensor& dy, LayerContext* context) override;
    std::int64_t parameterCount() const override { return m_up.parameterCount() + m_down.parameterCount(); }
    std::int64_t flopsPerSample() const override { return m_up.flopsPerSample() + m_down.flopsPerSample(); }
    // The projection up (its GELU is the wrapper's) and the one back down.
    ActivatedLayer& up() { return m_up; }
    Linear& down() { return m_down; }

private:
    std::int64_t m_width, m_hidden;
    ActivatedLayer m_up;
    Linear m_down;
};

} // namespace mantissa
