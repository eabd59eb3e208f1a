#pragma once
// y = a + b, elementwise over equal shapes: where a skip connection joins its branch (a
// residual block, a transformer block's two residual paths, any other skip connection). Each
// operand is read in its own dtype and widened by the addition itself, so a branch that ends in
// another dtype needs no cast; the sum is rounded once, to the op's compute type.
#include "engine/model/graph/graph_op.h"

namespace mantissa {

class AddOp final : public GraphOp {
public:
    AddOp(std::string name, DType computeType) : m_name(std::move(name)), m_computeType(computeType) {}

    std::string name() const override { return m_name; }
    DType computeType() const override { return m_computeType; }
    std::optional<DType> inputType(std::size_t) const override { return std::nullopt; }
    // Throws ConfigError naming the op when the shapes differ.
    std::vector<Shape> outputShapes(const std::vector<Shape>& inputs) const override;
    OpForward forward(PassState& pass, const std::vector<Tensor>& inputs) override;
    // Both operands' gradient is the sum's.
    std::vector<Tensor> backward(PassState& pass, const std::vector<Tensor>& outputGradients, LayerContext* context,
                                 const std::vector<bool>& inputGradNeeded) override;

private:
    std::string m_name;
    DType m_computeType;
};

} // namespace mantissa
