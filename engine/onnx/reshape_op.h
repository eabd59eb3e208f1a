#pragma once
// ONNX's Reshape (and any other view that keeps the batch and the element order): the same
// values under another per-sample shape, a view without a copy. Backward views the gradient back
// in the input's shape. It computes in the dtype its input already has, so it adds no rounding.
#include "engine/model/graph/graph_op.h"

namespace mantissa::onnx_import {

class ReshapeOp final : public GraphOp {
public:
    ReshapeOp(std::string name, DType type, Shape inputPerSample, Shape outputPerSample)
        : m_name(std::move(name)), m_type(type), m_input(std::move(inputPerSample)),
          m_output(std::move(outputPerSample))
    {}

    std::string name() const override { return m_name; }
    DType computeType() const override { return m_type; }
    std::optional<DType> inputType(std::size_t) const override { return m_type; }
    std::vector<Shape> outputShapes(const std::vector<Shape>& inputs) const override
    {
        return {batchedShape(inputs.at(0)[0], m_output)};
    }
    OpForward forward(PassState&, const std::vector<Tensor>& inputs) override
    {
        OpForward result;
        result.outputs.push_back(inputs.at(0).reshaped(batchedShape(inputs[0].shape()[0], m_output)));
        return result;
    }
    std::vector<Tensor> backward(PassState&, const std::vector<Tensor>& outputGradients, LayerContext*,
                                 const std::vector<bool>& inputGradNeeded) override
    {
        const Tensor& dy = outputGradients.at(0);
        return {inputGradNeeded.at(0) ? dy.reshaped(batchedShape(dy.shape()[0], m_input)) : Tensor()};
    }

private:
    std::string m_name;
    DType m_type;
    Shape m_input, m_output;
};

} // namespace mantissa::onnx_import
