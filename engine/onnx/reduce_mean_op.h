#pragma once
// ONNX's ReduceMean over some axes of each sample: the sum in fp32 divided by the count, rounded
// once to the compute type (a reduction never runs in a 16-bit type). Each input element of a
// sample adds to one output element, a map built once at compile time; backward hands each input
// element its output's gradient divided by the count.
#include "engine/model/graph/graph_op.h"

#include <cstdint>
#include <vector>

namespace mantissa::onnx_import {

class ReduceMeanOp final : public GraphOp {
public:
    // `target[e]`: the output element (within a sample) that input element e adds to.
    ReduceMeanOp(std::string name, DType type, Shape input, Shape output, std::vector<std::int64_t> target,
                 std::int64_t count)
        : m_name(std::move(name)), m_type(type), m_input(std::move(input)), m_output(std::move(output)),
          m_target(std::move(target)), m_count(count)
    {}

    std::string name() const override { return m_name; }
    DType computeType() const override { return m_type; }
    std::optional<DType> inputType(std::size_t) const override { return std::nullopt; }
    std::vector<Shape> outputShapes(const std::vector<Shape>& inputs) const override;
    OpForward forward(PassState& pass, const std::vector<Tensor>& inputs) override;
    std::vector<Tensor> backward(PassState& pass, const std::vector<Tensor>& outputGradients, LayerContext* context,
                                 const std::vector<bool>& inputGradNeeded) override;

private:
    std::string m_name;
    DType m_type;
    Shape m_input, m_output; // per sample
    std::vector<std::int64_t> m_target;
    std::int64_t m_count;
};

} // namespace mantissa::onnx_import
