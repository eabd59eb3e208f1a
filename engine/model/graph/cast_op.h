#pragma once
// The input in another dtype: where a block's values start, in the block's compute type (its
// layers and its skip path read the block's input in that type, whatever the layer before the
// block computed in). Forward is the graph's own conversion of its input; backward hands the
// gradient on in the same type, which the producer converts to its own.
#include "engine/model/graph/graph_op.h"

namespace mantissa {

class CastOp final : public GraphOp {
public:
    CastOp(std::string name, DType type) : m_name(std::move(name)), m_type(type) {}

    std::string name() const override { return m_name; }
    DType computeType() const override { return m_type; }
    std::optional<DType> inputType(std::size_t) const override { return m_type; }
    std::vector<Shape> outputShapes(const std::vector<Shape>& inputs) const override { return {inputs.at(0)}; }
    OpForward forward(PassState&, const std::vector<Tensor>& inputs) override
    {
        OpForward result;
        result.outputs.push_back(inputs.at(0));
        return result;
    }
    std::vector<Tensor> backward(PassState&, const std::vector<Tensor>& outputGradients, LayerContext*,
                                 const std::vector<bool>& inputGradNeeded) override
    {
        return {inputGradNeeded.at(0) ? outputGradients.at(0) : Tensor()};
    }

private:
    std::string m_name;
    DType m_type;
};

} // namespace mantissa
