#include "engine/model/graph/layer_op.h"

#include "engine/model/graph/graph.h"
#include "engine/util/check.h"

namespace mantissa {

// A layer compiles by default into one LayerOp: defined beside LayerOp so that layer.cpp, which
// the graph's ops include, does not include the graph in turn.
std::size_t Layer::appendTo(Graph& graph, std::size_t input)
{
    return graph.addNode1(std::make_unique<LayerOp>(*this), {input});
}

OpForward LayerOp::forward(PassState& pass, const std::vector<Tensor>& inputs)
{
    MANTISSA_ASSERT(inputs.size() == 1);
    ForwardResult out = m_layer.forward(pass, inputs[0]);
    OpForward result;
    result.outputs.push_back(std::move(out.output));
    result.context = std::move(out.context);
    return result;
}

std::vector<Tensor> LayerOp::backward(PassState& pass, const std::vector<Tensor>& outputGradients,
                                      LayerContext* context, const std::vector<bool>& inputGradNeeded)
{
    MANTISSA_ASSERT(outputGradients.size() == 1 && inputGradNeeded.size() == 1 && outputGradients[0].defined());
    const bool holderNeeds = pass.inputGradNeeded;
    pass.inputGradNeeded = inputGradNeeded[0];
    Tensor dx = m_layer.backward(pass, outputGradients[0], context);
    pass.inputGradNeeded = holderNeeds;
    return {inputGradNeeded[0] ? dx : Tensor()};
}

} // namespace mantissa
