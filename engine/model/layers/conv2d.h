#pragma once
// 2-D convolution over NCHW images: y = conv(x, W) + b with W [filters, channels / groups, kH, kW].
// The backend lowers it to GEMMs with tensor-core semantics (inputs in the compute type,
// fp32 accumulation), so its extents matter for alignment just as a linear layer's do. A
// grouped convolution is `groups` GEMMs side by side, each over its group's channels.
#include "engine/backend/geometry.h"
#include "engine/model/layer.h"

namespace mantissa {

// The extents a convolution's GEMMs want aligned, from its input and output channels, its
// groups and its kernel area: the ones each group multiplies and the forward's K. A transposed
// convolution has them too, with its own input and output channels.
std::vector<std::pair<std::string, std::int64_t>> convolutionTensorCoreExtents(std::int64_t in, std::int64_t out,
                                                                               std::int64_t groups, std::int64_t area);

class Conv2d final : public Layer {
public:
    // `input` is the validated per-sample shape {channels, height, width}; `init` as for Linear.
    Conv2d(const Shape& input, std::int64_t filters, std::int64_t kernel, std::int64_t stride, std::int64_t padding,
           bool bias, std::string init, bool xavier);
    // Any geometry the backends run (geometry.h): rectangular kernels, strides and padding,
    // dilations and groups. `perSample` has n = 0; its output extents must match the rest.
    Conv2d(const ConvGeometry& perSample, bool bias, std::string init, bool xavier);

    LayerKind kind() const override { return LayerKind::Conv2d; }
    Shape outputShape(const Shape& input) const override;
    void createParameters(Backend& backend, DType masterType, std::uint64_t seed) override;
    std::vector<Parameter*> parameters() override;
    ForwardResult forward(PassState& pass, const Tensor& x) override;
    Tensor backward(PassState& pass, const Tensor& dy, LayerContext* context) override;
    std::int64_t parameterCount() const override;
    std::int64_t flopsPerSample() const override;
    std::vector<std::pair<std::string, std::int64_t>> tensorCoreExtents() const override;
    bool runsGemms() const override { return true; }
    // Blocks run along the channels at each pixel (gemm_inputs.h): the input channels in the
    // forward, the output channels in the data gradient.
    std::vector<std::pair<std::string, std::int64_t>> blockedWidths() const override
    {
        if (m_shape.groups == 1)
            return {{"input channels", m_shape.inChannels}, {"filters", m_shape.outChannels}};
        return {{"input channels per group", m_shape.channelsPerGroup()},
                {"filters per group", m_shape.outChannels / m_shape.groups}};
    }

    // Set by a ReLU's wrapper (ActivatedLayer): the output is max(0, conv), fused into the
    // convolution's epilogue (conv2dForward), with the bits of a ReLU layer after it.
    void setReluAfter(bool relu) { m_reluAfter = relu; }
    // Its geometry for a batch of `batch` samples (n = batch).
    ConvGeometry geometry(std::int64_t batch) const;
    bool hasBias() const { return m_hasBias; }

private:
    ConvGeometry m_shape; // per-sample geometry; n is set per batch
    bool m_hasBias;
    std::string m_init;
    bool m_xavier;
    Parameter m_weight, m_bias;
    bool m_reluAfter = false;
};

} // namespace mantissa
