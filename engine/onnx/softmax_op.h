#pragma once
// Softmax and LogSoftmax over the last axis, each row computed in fp32 and rounded once to the
// compute type, as the engine's attention computes its softmax (Backend::softmaxForward with fp32
// arithmetic). Backward is the fp32 formula from the saved output: for softmax
// dx = y * (dy - sum(dy * y)) (Backend::softmaxBackward); for log-softmax
// dx = dy - exp(y) * sum(dy), on the host.
#include "engine/model/graph/graph_op.h"

namespace mantissa::onnx_import {

class SoftmaxOp final : public GraphOp {
public:
    // `causal`: each row r of a [..., width, width] plane sees only columns 0..r, the others
    // taking exactly 0 (an additive mask of -inf above the diagonal that the compilation folded:
    // attention_pattern.h), as the engine's causal attention computes it.
    SoftmaxOp(std::string name, DType type, std::int64_t width, bool logarithm, bool causal = false)
        : m_name(std::move(name)), m_type(type), m_width(width), m_log(logarithm), m_causal(causal)
    {}

    std::string name() const override { return m_name; }
    DType computeType() const override { return m_type; }
    std::optional<DType> inputType(std::size_t) const override { return m_type; }
    std::vector<Shape> outputShapes(const std::vector<Shape>& inputs) const override { return {inputs.at(0)}; }
    OpForward forward(PassState& pass, const std::vector<Tensor>& inputs) override;
    std::vector<Tensor> backward(PassState& pass, const std::vector<Tensor>& outputGradients, LayerContext* context,
                                 const std::vector<bool>& inputGradNeeded) override;

private:
    std::string m_name;
    DType m_type;
    std::int64_t m_width; // the softmax axis's extent
    bool m_log;
    bool m_causal;
};

} // namespace mantissa::onnx_import
