#pragma once
// A residual block: y = body(x) + shortcut(x). The shortcut is the identity, or a projection
// (a 1x1 conv2d for images, a linear for feature vectors) that maps x to the body's output
// shape. Sub-layers are named "<block>.<i>.<type>" ("3.residual.0.conv2d.weight") and the
// projection "<block>.shortcut"; they compute in the block's type unless they override it.
//
// In a model the block compiles into graph nodes (appendTo): x in the block's type (CastOp),
// the body's layers one node each, the projection, and the addition (AddOp) in the block's type.
#include "engine/model/graph/block_graph.h"
#include "engine/model/layer.h"

namespace mantissa {

class Residual final : public Layer {
public:
    // `overrides[i]` is the body layer's precision override from its spec. `projection` is null
    // for an identity shortcut. `input` and `output` are the per-sample shapes.
    Residual(std::vector<LayerPtr> body, std::vector<LayerFormat> overrides, LayerPtr projection, Shape input,
             Shape output);

    LayerKind kind() const override { return LayerKind::Residual; }
    Shape outputShape(const Shape& input) const override;
    // The body's layers named "<i>.<type>", then the projection, "shortcut".
    std::vector<Sublayer> sublayers() override;
    // Each body layer resolves its own override against the block's dtypes.
    void applyPrecision(const PrecisionPolicy& policy, const LayerDTypes& dtypes) override;
    void createParameters(Backend& backend, DType masterType, std::uint64_t seed) override;
    // In the order backward writes the gradients (the projection, then the body from its last
    // layer), as Model::parametersInBackwardOrder expects of every layer.
    std::vector<Parameter*> parameters() override;
    std::vector<std::pair<std::string, Tensor*>> buffers() override;
    std::size_t appendTo(Graph& graph, std::size_t input) override;
    // The block's own graph (block_graph.h), for running it outside a model's graph.
    ForwardResult forward(PassState& pass, const Tensor& x) override;
    Tensor backward(PassState& pass, const Tensor& dy, LayerContext* context) override;
    std::int64_t parameterCount() const override;
    std::int64_t flopsPerSample() const override;
    // The body's layers, then the shortcut's projection if there is one.
    std::vector<const Layer*> parts() const override;

private:
    std::vector<LayerPtr> m_body;
    std::vector<LayerFormat> m_overrides;
    std::vector<LayerDTypes> m_bodyDTypes; // from applyPrecision
    LayerDTypes m_dtypes;                  // the block's own, which the projection shares
    LayerPtr m_projection;
    Shape m_input, m_output; // per sample
    BlockGraph m_graph;
};

} // namespace mantissa
