#pragma once
// Batch normalisation over the channels of [N, C] or [N, C, H, W]. gamma and beta stay
// fp32 whatever the layer's compute type (the backend applies them in fp32, as cuDNN does: they
// are few, and an fp16 gamma near 1 has only 10 bits to learn with); the running statistics
// are fp32 buffers saved in checkpoints. The output is in the layer's compute type.
#include "engine/model/layer.h"

namespace mantissa {

class BatchNorm final : public Layer {
public:
    // `input` is the validated per-sample shape: {channels} or {channels, height, width}.
    BatchNorm(const Shape& input, float momentum, float epsilon);

    LayerKind kind() const override { return LayerKind::BatchNorm; }
    Shape outputShape(const Shape& input) const override { return input; }
    void createParameters(Backend& backend, DType masterType, std::uint64_t seed) override;
    std::vector<Parameter*> parameters() override { return {&m_gamma, &m_beta}; }
    std::vector<std::pair<std::string, Tensor*>> buffers() override;
    ForwardResult forward(PassState& pass, const Tensor& x) override;
    Tensor backward(PassState& pass, const Tensor& dy, LayerContext* context) override;
    std::int64_t parameterCount() const override { return 2 * m_channels; }
    // One multiply-add per value to normalise and scale (the statistics are not counted).
    std::int64_t flopsPerSample() const override { return 2 * m_valuesPerSample; }
    // PyTorch's sense: running = (1 - momentum) running + momentum batch.
    float momentum() const { return m_momentum; }
    float epsilon() const { return m_epsilon; }

private:
    std::int64_t m_channels, m_valuesPerSample;
    float m_momentum, m_epsilon;
    Parameter m_gamma, m_beta;
    Tensor m_runningMean, m_runningVar;
};

} // namespace mantissa
