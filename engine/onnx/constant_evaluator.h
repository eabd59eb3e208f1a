#pragma once
// Evaluates one node whose inputs are all constants: the shape arithmetic (Gather on shapes,
// Concat, Unsqueeze, Range, ConstantOfShape, Where, Slice, ...) and constant tensors that an
// exporter leaves in a graph. Shape and Size need only a value's static shape and are
// evaluated by the folding pass itself.
#include "engine/onnx/onnx_graph.h"

#include <onnx/onnx_pb.h>

#include <optional>
#include <vector>

namespace mantissa::onnx_import {

// The largest tensor the import computes as a constant; a bigger result stays a node.
constexpr std::int64_t kMaxFoldedElements = std::int64_t(1) << 22;

// `inputs[i]` is null where the node leaves optional input i out. Returns nullopt when the op
// is not one this evaluates, or its inputs or attributes are of a kind it does not handle (the
// node then stays in the graph). Throws OnnxImportError for constant inputs the op refuses.
std::optional<std::vector<OnnxTensor>>
evaluateConstantNode(const onnx::NodeProto& node, const std::vector<const OnnxTensor*>& inputs, std::int64_t opset);

} // namespace mantissa::onnx_import
