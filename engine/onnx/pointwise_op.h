#pragma once
// ONNX's pointwise functions with parameters (Clip, LeakyRelu, HardSigmoid, HardSwish;
// engine/backend/pointwise_function.h) as a graph op: the input converted to the compute type,
// the function evaluated in fp32 and rounded once to it; backward reads the saved input.
#include "engine/model/graph/graph_op.h"

namespace mantissa::onnx_import {

class PointwiseOp final : public GraphOp {
public:
    PointwiseOp(std::string name, DType computeType, PointwiseFunction function)
        : m_name(std::move(name)), m_type(computeType), m_function(function)
    {}

    std::string name() const override { return m_name; }
    DType computeType() const override { return m_type; }
    std::optional<DType> inputType(std::size_t) const override { return m_type; }
    std::vector<Shape> outputShapes(const std::vector<Shape>& inputs) const override { return {inputs.at(0)}; }
    OpForward forward(PassState& pass, const std::vector<Tensor>& inputs) override
    {
        const Tensor& x = inputs.at(0);
        Tensor y = pass.backend.empty(x.shape(), m_type);
        pass.backend.pointwiseForward(m_function, x, y);
        OpForward result;
        result.outputs.push_back(y);
        if (pass.training) {
            auto saved = std::make_unique<Saved>();
            saved->input = x;
            result.context = std::move(saved);
        }
        return result;
    }
    std::vector<Tensor> backward(PassState& pass, const std::vector<Tensor>& outputGradients, LayerContext* context,
                                 const std::vector<bool>& inputGradNeeded) override
    {
        if (!inputGradNeeded.at(0))
            return {Tensor()};
        const Tensor& dy = outputGradients.at(0);
        Tensor dx = pass.backend.empty(dy.shape(), m_type);
        pass.backend.pointwiseBackward(m_function, static_cast<Saved&>(*context).input, dy, dx);
        return {dx};
    }

private:
    struct Saved final : LayerContext {
        Tensor input;
    };

    std::string m_name;
    DType m_type;
    PointwiseFunction m_function;
};

} // namespace mantissa::onnx_import
