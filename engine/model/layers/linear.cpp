#include "engine/model/layers/linear.h"

#include "engine/model/init.h"

namespace mantissa {

namespace {
struct LinearContext final : LayerContext {
    Tensor input;
};
} // namespace

Linear::Linear(std::int64_t inFeatures, std::int64_t outFeatures, bool bias, std::string init, bool xavier)
    : m_in(inFeatures), m_out(outFeatures), m_hasBias(bias), m_init(std::move(init)), m_xavier(xavier)
{}

void Linear::createParameters(Backend& backend, DType masterType, std::uint64_t seed)
{
    const InitRule fallback = m_xavier ? xavierNormal(m_in, m_out) : heNormal(m_in);
    createParameter(m_weight, name() + ".weight", {m_out, m_in}, backend, masterType, computeType(),
                    parseInitRule(m_init, fallback), seed, true);
    if (m_hasBias)
        createParameter(m_bias, name() + ".bias", {m_out}, backend, masterType, computeType(),
                        {InitRule::Kind::Constant, 0.0f}, seed, false);
}

std::vector<Parameter*> Linear::parameters()
{
    if (m_hasBias)
        return {&m_weight, &m_bias};
    return {&m_weight};
}

ForwardResult Linear::forward(PassState& pass, const Tensor& x)
{
    const std::int64_t batch = x.shape()[0];
    Tensor input = x.reshaped({batch, m_in});
    Tensor y = pass.backend.empty({batch, m_out}, computeType());
    // K = in features, contiguous in both x [N, in] and W [out, in].
    const Tensor xq = gemmInput(pass, input, GemmPass::Forward, GemmOperand::Activation, KLayout::rows(batch, m_in));
    const Tensor wq =
        gemmInput(pass, m_weight.working, GemmPass::Forward, GemmOperand::Weight, KLayout::rows(m_out, m_in));
    if (m_hasBias)
        pass.backend.gemmRowBias(Transpose::No, Transpose::Yes, batch, m_out, m_in, xq, wq, m_bias.working, y);
    else
        pass.backend.gemm(Transpose::No, Transpose::Yes, batch, m_out, m_in, 1.0f, xq, wq, 0.0f, y);
    auto context = std::make_unique<LinearContext>();
    if (pass.training)
        context->input = input;
    return {y, std::move(context)};
}

Tensor Linear::backward(PassState& pass, const Tensor& dy, LayerContext* context)
{
    auto& saved = static_cast<LinearContext&>(*context);
    const std::int64_t batch = dy.shape()[0];
    // dW = dy^T x: its output is rounded to the compute type, which is where small
    // gradients underflow in fp16 unless the loss scale lifted them.
    // K = batch, the leading dimension of both dy [N, out] and x [N, in].
    const Tensor dyT =
        gemmInput(pass, dy, GemmPass::WeightGrad, GemmOperand::Gradient, KLayout::along(1, batch, m_out));
    const Tensor xT =
        gemmInput(pass, saved.input, GemmPass::WeightGrad, GemmOperand::Activation, KLayout::along(1, batch, m_in));
    pass.backend.gemm(Transpose::Yes, Transpose::No, m_out, m_in, batch, 1.0f, dyT, xT, 0.0f, m_weight.grad);
    if (m_hasBias)
        pass.backend.rowBiasGrad(dy, m_bias.grad);
    if (!pass.inputGradNeeded)
        return {};
    Tensor dx = pass.backend.empty({batch, m_in}, computeType());
    // K = out features: contiguous in dy [N, out], the leading dimension of W [out, in].
    const Tensor dyq = gemmInput(pass, dy, GemmPass::DataGrad, GemmOperand::Gradient, KLayout::rows(batch, m_out));
    const Tensor wq =
        gemmInput(pass, m_weight.working, GemmPass::DataGrad, GemmOperand::Weight, KLayout::along(1, m_out, m_in));
    pass.backend.gemm(Transpose::No, Transpose::No, batch, m_in, m_out, 1.0f, dyq, wq, 0.0f, dx);
    return dx;
}

} // namespace mantissa
