#pragma once
// ONNX's ConvTranspose on NCHW images, y = conv_transpose(x, W) + b with W [in channels,
// out channels / groups, kH, kW]: the data gradient of a convolution, run as one. Its geometry
// is that of the convolution it transposes (geometry.h), whose input is this layer's output and
// whose output is this layer's input; W is that convolution's weight as it is. So the forward
// is the backend's conv2dBackwardData, the input gradient its conv2dForward and the weight
// gradient its conv2dBackwardFilter with the roles of x and dy swapped: each a GEMM with
// tensor-core semantics whose inputs a recipe quantises as a convolution's, and no kernel of
// its own. The bias joins the fp32 sum before the one rounding to the compute type, as a
// convolution's does.
#include "engine/backend/geometry.h"
#include "engine/model/layer.h"

namespace mantissa::onnx_import {

class ConvTranspose2d final : public Layer {
public:
    // `transposed` has n = 0 and is a convolution's geometry (ConvGeometry::consistent): outH,
    // outW (this layer's input extents) are the sliding window's over inH, inW (its output's).
    ConvTranspose2d(const ConvGeometry& transposed, bool bias);

    // A convolution, for the tables that group layers by kind.
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
    // Blocks run along the channels at each pixel: this layer's input channels in the forward
    // (the transposed convolution's filters), its output channels in the data gradient.
    std::vector<std::pair<std::string, std::int64_t>> blockedWidths() const override;

private:
    ConvGeometry geometry(std::int64_t batch) const;
    // y = round(sum + b): the fp32 sums and the bias broadcast over every pixel, rounded once into y.
    void addBias(PassState& pass, const Tensor& sums, Tensor& y) const;
    // dbias[c] = the sum of dy over the batch and the pixels of channel c, in fp32.
    void biasGradient(PassState& pass, const Tensor& dy);

    ConvGeometry m_shape; // of the convolution this layer transposes, per sample
    bool m_hasBias;
    Parameter m_weight, m_bias;
};

} // namespace mantissa::onnx_import
