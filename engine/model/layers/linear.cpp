#include "engine/model/layers/linear.h"

#include "engine/model/init.h"
#include "engine/util/check.h"

namespace mantissa {

namespace {
struct LinearContext final : LayerContext {
    Tensor input;
};
} // namespace

Linear::Linear(std::int64_t inFeatures, std::int64_t outFeatures, bool bias, std::string init, bool xavier,
               std::int64_t tokens)
    : m_in(inFeatures), m_out(outFeatures), m_tokens(tokens), m_hasBias(bias), m_init(std::move(init)), m_xavier(xavier)
{}

Shape Linear::outputShape(const Shape& input) const
{
    std::vector<std::int64_t> dims = input.dims();
    dims.back() = m_out;
    return Shape(dims);
}

void Linear::createParameters(Backend& backend, DType masterType, std::uint64_t seed)
{
    const InitRule fallback = m_xavier ? xavierNormal(m_in, m_out) : heNormal(m_in);
    MANTISSA_ASSERT(m_sharesTable == (m_tied != nullptr)); // the model ties a "tied" head first
    if (!m_tied)
        createParameter(m_weight, name() + ".weight", {m_out, m_in}, backend, masterType, computeType(),
                        parseInitRule(m_init, fallback), seed, true);
    if (m_hasBias)
        createParameter(m_bias, name() + ".bias", {m_out}, backend, masterType, computeType(),
                        {InitRule::Kind::Constant, 0.0f}, seed, false);
}

std::vector<Parameter*> Linear::parameters()
{
    std::vector<Parameter*> all;
    if (!m_tied)
        all.push_back(&m_weight);
    if (m_hasBias)
        all.push_back(&m_bias);
    return all;
}

ForwardResult Linear::forward(PassState& pass, const Tensor& x)
{
    const std::int64_t rows = x.numel() / m_in;
    Tensor input = x.reshaped({rows, m_in});
    Tensor y = pass.backend.empty({rows, m_out}, computeType());
    // K = in features, contiguous in both x [rows, in] and W [out, in].
    const GemmOperandValues xq =
        gemmInput(pass, input, GemmPass::Forward, GemmOperand::Activation, KLayout::rows(rows, m_in));
    const GemmOperandValues wq =
        gemmInput(pass, weight().working, GemmPass::Forward, GemmOperand::Weight, KLayout::rows(m_out, m_in));
    const OperandScales scales{xq.scale, wq.scale};
    if (m_hasBias)
        pass.backend.gemmRowBias(Transpose::No, Transpose::Yes, rows, m_out, m_in, xq.values, wq.values, m_bias.working,
                                 y, scales);
    else
        pass.backend.gemm(Transpose::No, Transpose::Yes, rows, m_out, m_in, scales.product(), xq.values, wq.values,
                          0.0f, y);
    auto context = std::make_unique<LinearContext>();
    if (pass.training)
        context->input = input;
    return {y.reshaped(outputShape(x.shape())), std::move(context)};
}

Tensor Linear::backward(PassState& pass, const Tensor& dy, LayerContext* context)
{
    auto& saved = static_cast<LinearContext&>(*context);
    const std::int64_t rows = dy.numel() / m_out;
    const Tensor gradient = dy.reshaped({rows, m_out});
    // dW = dy^T x: its output is rounded to the compute type, which is where small
    // gradients underflow in fp16 unless the loss scale lifted them.
    // K = rows, the leading dimension of both dy [rows, out] and x [rows, in].
    const GemmOperandValues dyT =
        gemmInput(pass, gradient, GemmPass::WeightGrad, GemmOperand::Gradient, KLayout::along(1, rows, m_out));
    const GemmOperandValues xT =
        gemmInput(pass, saved.input, GemmPass::WeightGrad, GemmOperand::Activation, KLayout::along(1, rows, m_in));
    pass.backend.gemm(Transpose::Yes, Transpose::No, m_out, m_in, rows, OperandScales{dyT.scale, xT.scale}.product(),
                      dyT.values, xT.values, 0.0f, weight().grad);
    if (m_hasBias)
        pass.backend.rowBiasGrad(gradient, m_bias.grad);
    if (!pass.inputGradNeeded)
        return {};
    Tensor dx = pass.backend.empty({rows, m_in}, computeType());
    // K = out features: contiguous in dy [rows, out], the leading dimension of W [out, in].
    const GemmOperandValues dyq =
        gemmInput(pass, gradient, GemmPass::DataGrad, GemmOperand::Gradient, KLayout::rows(rows, m_out));
    const GemmOperandValues wq =
        gemmInput(pass, weight().working, GemmPass::DataGrad, GemmOperand::Weight, KLayout::along(1, m_out, m_in));
    pass.backend.gemm(Transpose::No, Transpose::No, rows, m_in, m_out, OperandScales{dyq.scale, wq.scale}.product(),
                      dyq.values, wq.values, 0.0f, dx);
    std::vector<std::int64_t> dims = dy.shape().dims();
    dims.back() = m_in;
    return dx.reshaped(Shape(dims));
}

} // namespace mantissa
