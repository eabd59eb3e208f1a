#include "engine/onnx/conv_transpose_layer.h"

#include "engine/model/init.h"
#include "engine/model/layers/conv2d.h"
#include "engine/util/check.h"

namespace mantissa::onnx_import {

namespace {

struct ConvTransposeContext final : LayerContext {
    Tensor input;
};

// A tensor of `shape` and `dtype` holding ones: the other operand of the GEMMs that broadcast
// the bias and sum its gradient (a product with 1 is exact).
Tensor ones(Backend& backend, const Shape& shape, DType dtype)
{
    Tensor t = backend.empty(shape, dtype);
    backend.fill(t, 1.0f);
    return t;
}

} // namespace

ConvTranspose2d::ConvTranspose2d(const ConvGeometry& transposed, bool bias) : m_shape(transposed), m_hasBias(bias)
{
    MANTISSA_ASSERT(m_shape.consistent());
}

ConvGeometry ConvTranspose2d::geometry(std::int64_t batch) const
{
    ConvGeometry g = m_shape;
    g.n = batch;
    return g;
}

Shape ConvTranspose2d::outputShape(const Shape& input) const
{
    return {input[0], m_shape.inChannels, m_shape.inH, m_shape.inW};
}

void ConvTranspose2d::createParameters(Backend& backend, DType masterType, std::uint64_t seed)
{
    // The file's values replace these (compile_onnx.cpp); He's rule over what each output reads.
    const std::int64_t fanIn = m_shape.outChannels / m_shape.groups * m_shape.kH * m_shape.kW;
    createParameter(m_weight, name() + ".weight",
                    {m_shape.outChannels, m_shape.channelsPerGroup(), m_shape.kH, m_shape.kW}, backend, masterType,
                    computeType(), heNormal(fanIn), seed, true);
    if (m_hasBias)
        createParameter(m_bias, name() + ".bias", {m_shape.inChannels}, backend, masterType, computeType(),
                        {InitRule::Kind::Constant, 0.0f}, seed, false);
}

std::vector<Parameter*> ConvTranspose2d::parameters()
{
    if (m_hasBias)
        return {&m_weight, &m_bias};
    return {&m_weight};
}

void ConvTranspose2d::addBias(PassState& pass, const Tensor& sums, Tensor& y) const
{
    // The bias over one sample's pixels, [channels, pixels] = b [channels, 1] x ones [1, pixels],
    // exact in fp32; then added to every sample's sums and rounded once into y.
    const std::int64_t channels = m_shape.inChannels, pixels = m_shape.inH * m_shape.inW;
    const Tensor& bias = m_bias.working;
    Tensor table = pass.backend.empty({channels, pixels}, DType::F32);
    pass.backend.gemm(Transpose::No, Transpose::No, channels, pixels, 1, 1.0f, bias.reshaped({channels, 1}),
                      ones(pass.backend, {1, pixels}, bias.dtype()), 0.0f, table);
    pass.backend.addBroadcast(sums, table, y, channels * pixels);
}

void ConvTranspose2d::biasGradient(PassState& pass, const Tensor& dy)
{
    // Summed over the samples into [channels, pixels], then over the pixels by a GEMM with ones,
    // both in fp32, and rounded once into the gradient.
    const std::int64_t channels = m_shape.inChannels, pixels = m_shape.inH * m_shape.inW;
    Tensor perPixel = pass.backend.empty({channels, pixels}, DType::F32);
    pass.backend.addBroadcastBackward(dy, perPixel, channels * pixels);
    Tensor dbias = m_bias.grad.reshaped({channels, 1});
    pass.backend.gemm(Transpose::No, Transpose::No, channels, 1, pixels, 1.0f, perPixel,
                      ones(pass.backend, {pixels, 1}, DType::F32), 0.0f, dbias);
}

ForwardResult ConvTranspose2d::forward(PassState& pass, const Tensor& x)
{
    const ConvGeometry g = geometry(x.shape()[0]);
    Tensor y = pass.backend.empty(outputShape(x.shape()), computeType());
    // The transposed convolution's data gradient: K = this layer's input channels of a group x
    // kernel area, and blocks run along those channels, within each group, as in a
    // convolution's data gradient (conv2d.cpp).
    const std::int64_t filtersPerGroup = g.outChannels / g.groups;
    const GemmOperandValues xq = gemmInput(pass, x, GemmPass::Forward, GemmOperand::Activation,
                                           KLayout::along(g.n * g.groups, filtersPerGroup, g.outH * g.outW));
    const GemmOperandValues wq =
        gemmInput(pass, m_weight.working, GemmPass::Forward, GemmOperand::Weight,
                  KLayout::along(g.groups, filtersPerGroup, g.channelsPerGroup() * g.kH * g.kW));
    if (m_hasBias) {
        Tensor sums = pass.backend.empty(y.shape(), DType::F32);
        pass.backend.conv2dBackwardData(xq.values, wq.values, sums, g, {xq.scale, wq.scale});
        addBias(pass, sums, y);
    } else {
        pass.backend.conv2dBackwardData(xq.values, wq.values, y, g, {xq.scale, wq.scale});
    }
    auto context = std::make_unique<ConvTransposeContext>();
    if (pass.training)
        context->input = x;
    return {y, std::move(context)};
}

Tensor ConvTranspose2d::backward(PassState& pass, const Tensor& dy, LayerContext* context)
{
    auto& saved = static_cast<ConvTransposeContext&>(*context);
    const ConvGeometry g = geometry(dy.shape()[0]);
    if (m_hasBias)
        biasGradient(pass, dy);
    // The filter gradient of the transposed convolution, with dy in the place of its input and
    // x in the place of its output gradient: K = batch x pixels, blocks around them per channel.
    const GemmOperandValues dyT = gemmInput(pass, dy, GemmPass::WeightGrad, GemmOperand::Gradient,
                                            KLayout::around(g.n, g.inChannels, g.inH * g.inW));
    const GemmOperandValues xT = gemmInput(pass, saved.input, GemmPass::WeightGrad, GemmOperand::Activation,
                                           KLayout::around(g.n, g.outChannels, g.outH * g.outW));
    pass.backend.conv2dBackwardFilter(dyT.values, xT.values, m_weight.grad, nullptr, g, {dyT.scale, xT.scale});
    if (!pass.inputGradNeeded)
        return {};
    // dx is the convolution's forward of dy: K = this layer's output channels of a group x kernel
    // area, blocks along them.
    Tensor dx = pass.backend.empty(saved.input.shape(), computeType());
    const GemmOperandValues dyq = gemmInput(pass, dy, GemmPass::DataGrad, GemmOperand::Gradient,
                                            KLayout::along(g.n * g.groups, g.channelsPerGroup(), g.inH * g.inW));
    const GemmOperandValues wq = gemmInput(pass, m_weight.working, GemmPass::DataGrad, GemmOperand::Weight,
                                           KLayout::along(g.outChannels, g.channelsPerGroup(), g.kH * g.kW));
    pass.backend.conv2dForward(dyq.values, wq.values, nullptr, dx, g, {dyq.scale, wq.scale});
    return dx;
}

std::int64_t ConvTranspose2d::parameterCount() const
{
    return m_shape.weightCount() + (m_hasBias ? m_shape.inChannels : 0);
}

// The products of the convolution it transposes: one multiply-add per weight tap per pixel of
// this layer's input.
std::int64_t ConvTranspose2d::flopsPerSample() const { return 2 * m_shape.multiplyAdds(); }

// This layer's input channels are the transposed convolution's outputs, and its outputs its inputs.
std::vector<std::pair<std::string, std::int64_t>> ConvTranspose2d::tensorCoreExtents() const
{
    return convolutionTensorCoreExtents(m_shape.outChannels, m_shape.inChannels, m_shape.groups,
                                        m_shape.kH * m_shape.kW);
}

std::vector<std::pair<std::string, std::int64_t>> ConvTranspose2d::blockedWidths() const
{
    const std::int64_t in = m_shape.outChannels, out = m_shape.inChannels;
    if (m_shape.groups == 1)
        return {{"input channels", in}, {"output channels", out}};
    return {{"input channels per group", in / m_shape.groups}, {"output channels per group", out / m_shape.groups}};
}

} // namespace mantissa::onnx_import
