#pragma once
// Layer norm and RMS norm over the last (feature) axis of [N, features] or [N, tokens,
// features]. As with batch norm, the gain and bias stay fp32 and the statistics are computed in
// fp32 (Backend::rowNormForward) whatever the compute type; "statistics": "compute" computes
// them in the compute dtype instead, to show the overflow and the lost sums that are why
// nobody does. The output is in the layer's compute type.
#include "engine/model/layer.h"

namespace mantissa {

class RowNorm final : public Layer {
public:
    // `width` is the feature count; `valuesPerSample` what one sample holds (for FLOPs).
    RowNorm(RowNormKind kind, std::int64_t width, std::int64_t valuesPerSample, float epsilon, bool bias,
            InternalPrecision statistics);

    LayerKind kind() const override
    {
        return m_kind == RowNormKind::LayerNorm ? LayerKind::LayerNorm : LayerKind::RmsNorm;
    }
    Shape outputShape(const Shape& input) const override { return input; }
    void createParameters(Backend& backend, DType masterType, std::uint64_t seed) override;
    std::vector<Parameter*> parameters() override;
    ForwardResult forward(PassState& pass, const Tensor& x) override;
    Tensor backward(PassState& pass, const Tensor& dy, LayerContext* context) override;
    std::int64_t parameterCount() const override { return m_width * (m_hasBias ? 2 : 1); }
    // Per value: subtract (layer norm), scale by the inverse deviation, gain, bias; plus the
    // statistics' sum and sum of squares.
    std::int64_t flopsPerSample() const override { return (m_kind == RowNormKind::LayerNorm ? 7 : 5) * m_values; }
    std::int64_t width() const { return m_width; }
    float epsilon() const { return m_epsilon; }

private:
    RowNormKind m_kind;
    std::int64_t m_width, m_values;
    float m_epsilon;
    bool m_hasBias;
    InternalPrecision m_statistics;
    Parameter m_gain, m_bias;
};

} // namespace mantissa
