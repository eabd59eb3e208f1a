#pragma once
// One operation of a model graph (graph.h): any number of inputs and outputs, an explicit
// forward and an explicit backward. A layer of the JSON layer list is one (LayerOp); the graph's
// own ops add the joins a list cannot say (AddOp) and the dtype a block's values live in (CastOp).
#include "engine/model/layer.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mantissa {

struct OpForward {
    std::vector<Tensor> outputs;
    std::unique_ptr<LayerContext> context; // what backward needs; may be null
};

class GraphOp {
public:
    virtual ~GraphOp() = default;

    // "3.residual.0.conv2d", "3.residual.add": what the lens, messages and the editor call it.
    virtual std::string name() const = 0;
    // The dtype this op computes in: by default its outputs' dtype, and the one each output's
    // gradient is converted to before backward reads it.
    virtual DType computeType() const = 0;
    // Where an output is held in another dtype than the op computes in (attention's scores in fp32
    // under a 16-bit compute type, attention_scores.h): output `output`'s dtype, and the one its
    // gradient is converted to before backward reads it.
    virtual DType outputType(std::size_t) const { return computeType(); }
    virtual DType outputGradientType(std::size_t) const { return computeType(); }
    // The dtype input `i` is converted to before forward reads it; none takes the value as it is
    // (an addition widens each operand itself).
    virtual std::optional<DType> inputType(std::size_t input) const = 0;
    // Batched output shapes for batched input shapes.
    virtual std::vector<Shape> outputShapes(const std::vector<Shape>& inputs) const = 0;

    virtual OpForward forward(PassState& pass, const std::vector<Tensor>& inputs) = 0;
    // `outputGradients[k]` is the gradient of output k in outputGradientType(k), undefined where nothing
    // consumed that output. Writes the op's parameter gradients and returns one gradient per
    // input, undefined where `inputGradNeeded[i]` is false (nothing upstream needs it).
    virtual std::vector<Tensor> backward(PassState& pass, const std::vector<Tensor>& outputGradients,
                                         LayerContext* context, const std::vector<bool>& inputGradNeeded) = 0;

    // In the order backward writes their gradients.
    virtual std::vector<Parameter*> parameters() { return {}; }
    virtual std::vector<std::pair<std::string, Tensor*>> buffers() { return {}; }
    // The layer behind the op, for the walks that descend into layers (the GEMMs a recipe
    // covers, gemm_coverage.h); null for the graph's own ops, which run no GEMM.
    virtual Layer* layer() { return nullptr; }
};

using GraphOpPtr = std::unique_ptr<GraphOp>;

} // namespace mantissa
