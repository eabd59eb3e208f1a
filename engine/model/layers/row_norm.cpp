#include "engine/model/layers/row_norm.h"

#include "engine/model/init.h"
#include "engine/util/check.h"

namespace mantissa {

namespace {
struct RowNormContext final : LayerContext {
    Tensor input, mean, invStd; // the statistics this forward normalised with
};
} // namespace

RowNorm::RowNorm(RowNormKind kind, std::int64_t width, std::int64_t valuesPerSample, float epsilon, bool bias,
                 InternalPrecision statistics)
    : m_kind(kind), m_width(width), m_values(valuesPerSample), m_epsilon(epsilon),
      m_hasBias(bias && kind == RowNormKind::LayerNorm), m_statistics(statistics)
{}

void RowNorm::createParameters(Backend& backend, DType masterType, std::uint64_t seed)
{
    // Not decayed, as batch norm's: shrinking the gain towards 0 fights the scale it learns.
    createParameter(m_gain, name() + ".gain", {m_width}, backend, masterType, DType::F32,
                    {InitRule::Kind::Constant, 1.0f}, seed, false);
    if (m_hasBias)
        createParameter(m_bias, name() + ".bias", {m_width}, backend, masterType, DType::F32,
                        {InitRule::Kind::Constant, 0.0f}, seed, false);
}

std::vector<Parameter*> RowNorm::parameters()
{
    if (m_hasBias)
        return {&m_gain, &m_bias};
    return {&m_gain};
}

ForwardResult RowNorm::forward(PassState& pass, const Tensor& x)
{
    const std::int64_t rows = x.numel() / m_width;
    Tensor y = pass.backend.empty(x.shape(), computeType());
    auto context = std::make_unique<RowNormContext>();
    context->mean = pass.backend.empty({rows}, DType::F32);
    context->invStd = pass.backend.empty({rows}, DType::F32);
    const DType statistics = m_statistics == InternalPrecision::Fp32 ? DType::F32 : computeType();
    pass.backend.rowNormForward(m_kind, x, m_gain.working, m_hasBias ? &m_bias.working : nullptr, y, context->mean,
                                context->invStd, m_epsilon, statistics);
    if (pass.tap) {
        if (m_kind == RowNormKind::LayerNorm)
            pass.tap->insideForward(pass.layerIndex, name() + ".mean", context->mean);
        pass.tap->insideForward(pass.layerIndex, name() + ".inv_std", context->invStd);
    }
    if (pass.training)
        context->input = x;
    return {y, std::move(context)};
}

Tensor RowNorm::backward(PassState& pass, const Tensor& dy, LayerContext* context)
{
    auto& saved = static_cast<RowNormContext&>(*context);
    MANTISSA_ASSERT(saved.input.defined()); // backward follows a training forward
    // dx comes with the parameter gradients from one pass, as batch norm's does.
    Tensor dx = pass.backend.empty(dy.shape(), computeType());
    pass.backend.rowNormBackward(m_kind, saved.input, dy, m_gain.working, saved.mean, saved.invStd, dx, m_gain.grad,
                                 m_hasBias ? &m_bias.grad : nullptr);
    if (!pass.inputGradNeeded)
        return {};
    return dx;
}

} // namespace mantissa
