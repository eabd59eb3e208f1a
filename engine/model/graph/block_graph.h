#pragma once
// A block's own graph (its Layer::appendTo over its parts), for running the block where it is
// not compiled into a model's graph: a block tested on its own, or held inside another layer.
// A model compiles the block's parts into its own graph instead, so the block's structure is
// stated once, in appendTo.
#include "engine/model/graph/graph.h"

#include <memory>

namespace mantissa {

class BlockGraph {
public:
    // `inputPerSample`: the block's per-sample input shape. The graph is compiled at the first
    // forward after reset(), so it takes the block's dtypes as applyPrecision left them.
    ForwardResult forward(Layer& block, const Shape& inputPerSample, PassState& pass, const Tensor& x);
    Tensor backward(PassState& pass, const Tensor& dy, LayerContext* context);
    // Drops the compiled graph (the block's dtypes changed).
    void reset() { m_graph.reset(); }

private:
    std::unique_ptr<Graph> m_graph;
};

} // namespace mantissa
