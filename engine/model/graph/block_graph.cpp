#include "engine/model/graph/block_graph.h"

namespace mantissa {

namespace {
struct BlockContext final : LayerContext {
    GraphForward forward;
};
} // namespace

ForwardResult BlockGraph::forward(Layer& block, const Shape& inputPerSample, PassState& pass, const Tensor& x)
{
    if (!m_graph) {
        m_graph = std::make_unique<Graph>(inputPerSample, block.inputType());
        m_graph->beginGroup(block.name(), block.computeType());
        m_graph->setOutput(block.appendTo(*m_graph, m_graph->input()));
    }
    auto context = std::make_unique<BlockContext>();
    // The holder's taps see the block as one layer.
    context->forward = m_graph->forward(pass, x, false);
    Tensor y = context->forward.output;
    return {y, std::move(context)};
}

Tensor BlockGraph::backward(PassState& pass, const Tensor& dy, LayerContext* context)
{
    auto& saved = static_cast<BlockContext&>(*context);
    return m_graph->backward(pass, dy, saved.forward, pass.inputGradNeeded, false);
}

} // namespace mantissa
