#include "engine/model/layers/transformer_block.h"

namespace mantissa {

namespace {
struct TransformerContext final : LayerContext {
    std::unique_ptr<LayerContext> norm1, attention, norm2, mlp;
};
} // namespace

TransformerBlock::TransformerBlock(const TransformerSettings& s)
    : m_values(s.tokens * s.width), m_norm1(s.norm, s.width, s.tokens * s.width, s.epsilon, true, s.statistics),
      m_attention(s.width, s.heads, s.tokens, s.causal, s.softmax, s.attentionDropout, true),
      m_norm2(s.norm, s.width, s.tokens * s.width, s.epsilon, true, s.statistics),
      m_mlp(s.width, s.hidden, s.tokens, true)
{}

std::vector<Parameter*> TransformerBlock::parameters()
{
    std::vector<Parameter*> all;
    for (Layer* part : std::initializer_list<Layer*>{&m_mlp, &m_norm2, &m_attention, &m_norm1})
        for (Parameter* p : part->parameters())
            all.push_back(p);
    return all;
}

ForwardResult TransformerBlock::forward(PassState& pass, const Tensor& x)
{
    Backend& be = pass.backend;
    auto context = std::make_unique<TransformerContext>();
    ForwardResult n1 = m_norm1.forward(pass, x);
    context->norm1 = std::move(n1.context);
    ForwardResult attended = m_attention.forward(pass, n1.output);
    context->attention = std::move(attended.context);
    Tensor h = be.empty(x.shape(), computeType());
    be.add(x, attended.output, h);
    ForwardResult n2 = m_norm2.forward(pass, h);
    context->norm2 = std::move(n2.context);
    ForwardResult mlp = m_mlp.forward(pass, n2.output);
    context->mlp = std::move(mlp.context);
    Tensor y = be.empty(x.shape(), computeType());
    be.add(h, mlp.output, y);
    return {y, std::move(context)};
}

Tensor TransformerBlock::backward(PassState& pass, const Tensor& dy, LayerContext* context)
{
    auto& saved = static_cast<TransformerContext&>(*context);
    Backend& be = pass.backend;
    const bool inputGradNeeded = pass.inputGradNeeded;
    // Inside the block every part feeds another; only norm1's dx is the block's own.
    pass.inputGradNeeded = true;
    const Tensor dNorm2 = m_mlp.backward(pass, dy, saved.mlp.get());
    const Tensor dhNorm = m_norm2.backward(pass, dNorm2, saved.norm2.get());
    Tensor dh = be.empty(dy.shape(), computeType());
    be.add(dy, dhNorm, dh);
    const Tensor dNorm1 = m_attention.backward(pass, dh, saved.attention.get());
    pass.inputGradNeeded = inputGradNeeded;
    const Tensor dxNorm = m_norm1.backward(pass, dNorm1, saved.norm1.get());
    if (!inputGradNeeded)
        return {};
    Tensor dx = be.empty(dy.shape(), computeType());
    be.add(dh, dxNorm, dx);
    return dx;
}

std::int64_t TransformerBlock::parameterCount() const
{
    return m_norm1.parameterCount() + m_attention.parameterCount() + m_norm2.parameterCount() + m_mlp.parameterCount();
}

std::int64_t TransformerBlock::flopsPerSample() const
{
    return m_norm1.flopsPerSample() + m_attention.flopsPerSample() + m_norm2.flopsPerSample() + m_mlp.flopsPerSample() +
           2 * m_values;
}

} // namespace mantissa
