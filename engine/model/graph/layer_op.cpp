#include "engine/model/graph/layer_op.h"

#include "engine/util/check.h"

namespace mantissa {

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
