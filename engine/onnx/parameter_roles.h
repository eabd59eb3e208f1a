#pragma once
// Which float initializers of a model are trainable parameters: those that feed a weight input,
// directly or through ops that only move values (Transpose, Reshape, Unsqueeze, ...): Gemm and
// MatMul operands, Conv and ConvTranspose weights and biases, normalisation scales and shifts,
// Gather tables (embeddings), Concat and Expand inputs (a class token), and finite tensors
// with dimensions added to or multiplied with activations (biases, learned positional tensors,
// layer scales). Everything else (rank-0 scalars, batch-norm running statistics, masks with
// infinities, shape data) is a constant.
#include "engine/onnx/onnx_graph.h"

#include <string>
#include <unordered_map>
#include <unordered_set>

namespace mantissa::onnx_import {

// `floatInitializers`: the model's float initializers by name (folded values excluded).
std::unordered_set<std::string>
trainableInitializers(const std::vector<OnnxNode>& nodes,
                      const std::unordered_map<std::string, const OnnxTensor*>& floatInitializers);

} // namespace mantissa::onnx_import
