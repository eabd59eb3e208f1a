#pragma once
// Folds, for the fixed input shape, every node whose inputs are constants: Constant nodes,
// Shape and Size of values whose shape ONNX inferred, and the arithmetic on them
// (constant_evaluator.h). ONNX shape inference runs between passes, so that a Reshape whose
// target became a constant gets a static output shape, whose Shape the next pass folds. Then
// drops the nodes and initializers no graph output depends on. Folded values become
// initializers of the model.
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace mantissa::onnx_import {

// Returns the names of the values the folding created (constants, never parameters).
// Throws OnnxImportError (naming `path`) when shape inference or a constant node fails.
std::unordered_set<std::string> foldConstants(onnx::ModelProto& model, const std::string& path, std::int64_t opset);

// Drops the shapes of intermediate values and outputs (the file's, which may be symbolic, or
// an earlier inference's), keeping the inputs' and the element types of the outputs.
void forgetInferredShapes(onnx::GraphProto& graph);

// A value's shape where every dimension is a number; nothing where its type is not a tensor, it
// has no shape, or a dimension is symbolic or unknown.
std::optional<std::vector<std::int64_t>> staticShapeOf(const onnx::ValueInfoProto& info);

// ONNX shape inference over the model (types and static shapes into value_info and outputs).
void inferShapes(onnx::ModelProto& model, const std::string& path);

} // namespace mantissa::onnx_import
