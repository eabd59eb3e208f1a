#pragma once
// A layer as a graph op: one input, one output, the layer's own forward and backward. The
// layer may hold others (an attention's projections, an activation's wrapper); they run inside
// it, as one node.
#include "engine/model/graph/graph_op.h"

namespace mantissa {

class LayerOp final : public GraphOp {
public:
    // `layer` must outlive the op (Graph::own, or the block that holds it).
    explicit LayerOp(Layer& layer) : m_layer(layer) {}

    std::string name() const override { return m_layer.name(); }
    DType computeType() const override { return m_layer.computeType(); }
    std::optional<DType> inputType(std::size_t) const override { return m_layer.inputType(); }
    std::vector<Shape> outputShapes(const std::vector<Shape>& inputs) const override
    {
        return {m_layer.outputShape(inputs.at(0))};
    }
    OpForward forward(PassState& pass, const std::vector<Tensor>& inputs) override;
    std::vector<Tensor> backward(PassState& pass, const std::vector<Tensor>& outputGradients, LayerContext* context,
                                 const std::vector<bool>& inputGradNeeded) override;
    std::vector<Parameter*> parameters() override { return m_layer.parameters(); }
    std::vector<std::pair<std::string, Tensor*>> buffers() override { return m_layer.buffers(); }
    Layer* layer() override { return &m_layer; }

private:
    Layer& m_layer;
};

} // namespace mantissa
