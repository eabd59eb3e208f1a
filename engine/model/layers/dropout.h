#pragma once
// Inverted dropout: in training each value is zeroed with probability `rate` and the rest are
// scaled by 1/(1-rate), so evaluation is the identity. The mask is drawn from (run seed, layer
// name, step), so a run repeats exactly and two dropout layers never share a mask.
#include "engine/model/layer.h"

namespace mantissa {

class Dropout final : public Layer {
public:
    explicit Dropout(float rate, std::int64_t valuesPerSample) : m_rate(rate), m_valuesPerSample(valuesPerSample) {}

    LayerKind kind() const override { return LayerKind::Dropout; }
    Shape outputShape(const Shape& input) const override { return input; }
    ForwardResult forward(PassState& pass, const Tensor& x) override;
    Tensor backward(PassState& pass, const Tensor& dy, LayerContext* context) override;
    std::int64_t flopsPerSample() const override { return m_valuesPerSample; } // one multiply per value
    float rate() const { return m_rate; }

private:
    float m_rate;
    std::int64_t m_valuesPerSample;
};

} // namespace mantissa
