#include "engine/model/graph/add_op.h"

#include "engine/util/check.h"

namespace mantissa {

std::vector<Shape> AddOp::outputShapes(const std::vector<Shape>& inputs) const
{
    if (inputs.size() != 2 || inputs[0] != inputs[1])
        throw ConfigError(m_name + ": an addition takes two inputs of one shape, got " +
                          (inputs.empty() ? std::string("none") : inputs[0].toString()) +
                          (inputs.size() > 1 ? " and " + inputs[1].toString() : std::string()));
    return {inputs[0]};
}

OpForward AddOp::forward(PassState& pass, const std::vector<Tensor>& inputs)
{
    MANTISSA_ASSERT(inputs.size() == 2);
    Tensor y = pass.backend.empty(inputs[0].shape(), m_computeType);
    pass.backend.add(inputs[0], inputs[1], y);
    OpForward result;
    result.outputs.push_back(y);
    return result;
}

std::vector<Tensor> AddOp::backward(PassState&, const std::vector<Tensor>& outputGradients, LayerContext*,
                                    const std::vector<bool>& inputGradNeeded)
{
    MANTISSA_ASSERT(outputGradients.size() == 1 && inputGradNeeded.size() == 2);
    const Tensor& dy = outputGradients[0];
    return {inputGradNeeded[0] ? dy : Tensor(), inputGradNeeded[1] ? dy : Tensor()};
}

} // namespace mantissa
