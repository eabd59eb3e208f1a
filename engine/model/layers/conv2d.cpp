#include "engine/model/layers/conv2d.h"

#include "engine/model/init.h"
#include "engine/util/check.h"

namespace mantissa {

namespace {
struct Conv2dContext final : LayerContext {
    Tensor input;
    // What the backend kept from the forward's product of `input` (asked for outside the
    // recipes only, where that product and the filter gradient both read `input` itself).
    ConvKeep keep;
};
} // namespace

Conv2d::Conv2d(const Shape& input, std::int64_t filters, std::int64_t kernel, std::int64_t stride, std::int64_t padding,
               bool bias, std::string init, bool xavier)
    : m_hasBias(bias), m_init(std::move(init)), m_xavier(xavier)
{
    m_shape.inChannels = input[0];
    m_shape.inH = input[1];
    m_shape.inW = input[2];
    m_shape.outChannels = filters;
    m_shape.kH = m_shape.kW = kernel;
    m_shape.strideH = m_shape.strideW = stride;
    m_shape.padH = m_shape.padW = padding;
    m_shape.outH = slidingOutput(m_shape.inH, kernel, stride, padding);
    m_shape.outW = slidingOutput(m_shape.inW, kernel, stride, padding);
}

Conv2d::Conv2d(const ConvGeometry& perSample, bool bias, std::string init, bool xavier)
    : m_shape(perSample), m_hasBias(bias), m_init(std::move(init)), m_xavier(xavier)
{
    MANTISSA_ASSERT(m_shape.consistent());
}

ConvGeometry Conv2d::geometry(std::int64_t batch) const
{
    ConvGeometry g = m_shape;
    g.n = batch;
    return g;
}

Shape Conv2d::outputShape(const Shape& input) const
{
    return {input[0], m_shape.outChannels, m_shape.outH, m_shape.outW};
}

void Conv2d::createParameters(Backend& backend, DType masterType, std::uint64_t seed)
{
    const std::int64_t area = m_shape.kH * m_shape.kW;
    const std::int64_t fanIn = m_shape.channelsPerGroup() * area;
    const InitRule fallback =
        m_xavier ? xavierNormal(fanIn, m_shape.outChannels / m_shape.groups * area) : heNormal(fanIn);
    createParameter(m_weight, name() + ".weight",
                    {m_shape.outChannels, m_shape.channelsPerGroup(), m_shape.kH, m_shape.kW}, backend, masterType,
                    computeType(), parseInitRule(m_init, fallback), seed, true);
    if (m_hasBias)
        createParameter(m_bias, name() + ".bias", {m_shape.outChannels}, backend, masterType, computeType(),
                        {InitRule::Kind::Constant, 0.0f}, seed, false);
}

std::vector<Parameter*> Conv2d::parameters()
{
    if (m_hasBias)
        return {&m_weight, &m_bias};
    return {&m_weight};
}

ForwardResult Conv2d::forward(PassState& pass, const Tensor& x)
{
    const ConvGeometry g = geometry(x.shape()[0]);
    Tensor y = pass.backend.empty(outputShape(x.shape()), computeType());
    // K = in channels (of a group) x kernel area; blocks run along the channels (gemm_inputs.h),
    // within each group: x [n, C, HW] is [n x groups, C / groups, HW].
    const std::int64_t area = g.kH * g.kW;
    const GemmOperandValues xq = gemmInput(pass, x, GemmPass::Forward, GemmOperand::Activation,
                                           KLayout::along(g.n * g.groups, g.channelsPerGroup(), g.inH * g.inW));
    const GemmOperandValues wq = gemmInput(pass, m_weight.working, GemmPass::Forward, GemmOperand::Weight,
                                           KLayout::along(g.outChannels, g.channelsPerGroup(), area));
    auto context = std::make_unique<Conv2dContext>();
    const bool keep = pass.training && !quantisesGemms();
    pass.backend.conv2dForward(xq.values, wq.values, m_hasBias ? &m_bias.working : nullptr, y, g, {xq.scale, wq.scale},
                               keep ? &context->keep : nullptr, m_reluAfter);
    if (pass.training)
        context->input = x;
    return {y, std::move(context)};
}

Tensor Conv2d::backward(PassState& pass, const Tensor& dy, LayerContext* context)
{
    auto& saved = static_cast<Conv2dContext&>(*context);
    const ConvGeometry g = geometry(dy.shape()[0]);
    // Like Linear's dW, the filter gradient is rounded to the compute type: fp16 underflow of
    // small gradients happens here unless the loss scale lifted them.
    // K = batch x output pixels: blocks run along them for each channel. Under a recipe the
    // bias gradient sums the quantised dy, since the backend computes it in the same op; for
    // that reason the random Hadamard transform leaves a convolution's dy and x unrotated
    // (the bias gradient would sum rotated values; Layer::weightGradientMayRotate).
    const std::int64_t outArea = g.outH * g.outW;
    const GemmOperandValues dyT =
        gemmInput(pass, dy, GemmPass::WeightGrad, GemmOperand::Gradient, KLayout::around(g.n, g.outChannels, outArea));
    const GemmOperandValues xT = gemmInput(pass, saved.input, GemmPass::WeightGrad, GemmOperand::Activation,
                                           KLayout::around(g.n, g.inChannels, g.inH * g.inW));
    Tensor* dbias = m_hasBias ? &m_bias.grad : nullptr;
    const ConvKeep* kept =
        xT.values.sharesStorageWith(saved.input) && xT.values.data() == saved.input.data() ? &saved.keep : nullptr;
    if (!pass.inputGradNeeded) {
        pass.backend.conv2dBackwardFilter(xT.values, dyT.values, m_weight.grad, dbias, g, {xT.scale, dyT.scale}, kept);
        return {};
    }
    Tensor dx = pass.backend.empty(saved.input.shape(), computeType());
    // K = out channels (of a group) x kernel area; blocks run along the output channels, within
    // each group.
    const std::int64_t filtersPerGroup = g.outChannels / g.groups;
    const GemmOperandValues dyq = gemmInput(pass, dy, GemmPass::DataGrad, GemmOperand::Gradient,
                                            KLayout::along(g.n * g.groups, filtersPerGroup, outArea));
    const GemmOperandValues wq =
        gemmInput(pass, m_weight.working, GemmPass::DataGrad, GemmOperand::Weight,
                  KLayout::along(g.groups, filtersPerGroup, g.channelsPerGroup() * g.kH * g.kW));
    if (dyq.values.sharesStorageWith(dyT.values)) // one dy for both products (no recipe: both are dy itself)
        pass.backend.conv2dBackward(xT.values, dyT.values, wq.values, m_weight.grad, dbias, dx, g,
                                    {xT.scale, dyT.scale}, {dyq.scale, wq.scale}, kept);
    else {
        pass.backend.conv2dBackwardFilter(xT.values, dyT.values, m_weight.grad, dbias, g, {xT.scale, dyT.scale}, kept);
        pass.backend.conv2dBackwardData(dyq.values, wq.values, dx, g, {dyq.scale, wq.scale});
    }
    return dx;
}

std::int64_t Conv2d::parameterCount() const { return m_shape.weightCount() + (m_hasBias ? m_shape.outChannels : 0); }

std::int64_t Conv2d::flopsPerSample() const { return 2 * m_shape.multiplyAdds(); }

std::vector<std::pair<std::string, std::int64_t>> convolutionTensorCoreExtents(std::int64_t in, std::int64_t out,
                                                                               std::int64_t groups, std::int64_t area)
{
    if (groups > 1)
        return {{"in channels per group", in / groups},
                {"out channels per group", out / groups},
                {"GEMM K (in channels per group x kernel area)", in / groups * area}};
    return {{"in channels", in}, {"out channels", out}, {"GEMM K (in channels x kernel area)", in * area}};
}

std::vector<std::pair<std::string, std::int64_t>> Conv2d::tensorCoreExtents() const
{
    return convolutionTensorCoreExtents(m_shape.inChannels, m_shape.outChannels, m_shape.groups,
                                        m_shape.kH * m_shape.kW);
}

} // namespace mantissa
