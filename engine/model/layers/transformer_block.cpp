#include "engine/model/layers/transformer_block.h"

#include "engine/model/graph/add_op.h"
#include "engine/model/graph/cast_op.h"

namespace mantissa {

TransformerBlock::TransformerBlock(const TransformerSettings& s)
    : m_input({s.tokens, s.width}), m_values(s.tokens * s.width),
      m_norm1(s.norm, s.width, s.tokens * s.width, s.epsilon, true, s.statistics),
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

void TransformerBlock::applyPrecision(const PrecisionPolicy& policy, const LayerDTypes& dtypes)
{
    Layer::applyPrecision(policy, dtypes);
    m_graph.reset();
}

std::size_t TransformerBlock::appendTo(Graph& graph, std::size_t input)
{
    const ValueId x = graph.addNode1(std::make_unique<CastOp>(name() + ".input", computeType()), {input});
    const ValueId attended = m_attention.appendTo(graph, m_norm1.appendTo(graph, x));
    const ValueId h =
        graph.addNode1(std::make_unique<AddOp>(name() + ".attention_residual", computeType()), {x, attended});
    const ValueId transformed = m_mlp.appendTo(graph, m_norm2.appendTo(graph, h));
    return graph.addNode1(std::make_unique<AddOp>(name(), computeType()), {h, transformed});
}

ForwardResult TransformerBlock::forward(PassState& pass, const Tensor& x)
{
    return m_graph.forward(*this, m_input, pass, x);
}

Tensor TransformerBlock::backward(PassState& pass, const Tensor& dy, LayerContext* context)
{
    return m_graph.backward(pass, dy, context);
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
