#pragma once
// Fully connected layer: y = x W^T + b, x [N, in], W [out, in]. The GEMMs take inputs in
// the compute type and accumulate in fp32 (tensor-core semantics).
#include "engine/model/layer.h"

namespace mantissa {

class Linear final : public Layer {
public:
    // `init`: "" (He-normal, or Xavier when `xavier`), "normal:STD" or "uniform:A".
    Linear(std::int64_t inFeatures, std::int64_t outFeatures, bool bias, std::string init, bool xavier);

    LayerKind kind() const override { return LayerKind::Linear; }
    Shape outputShape(const Shape& input) const override { return {input[0], m_out}; }
    void createParameters(Backend& backend, DType masterType, std::uint64_t seed) override;
    std::vector<Parameter*> parameters() override;
    ForwardResult forward(PassState& pass, const Tensor& x) override;
    Tensor backward(PassState& pass, const Tensor& dy, LayerContext* context) override;
    std::int64_t parameterCount() const override { return m_in * m_out + (m_hasBias ? m_out : 0); }
    std::int64_t flopsPerSample() const override { return 2 * m_in * m_out; }
    std::vector<std::pair<std::string, std::int64_t>> tensorCoreExtents() const override
    {
        return {{"in features", m_in}, {"out features", m_out}};
    }

private:
    std::int64_t m_in, m_out;
    bool m_hasBias;
    std::string m_init;
    bool m_xavier;
    Parameter m_weight, m_bias;
};

} // namespace mantissa
