#pragma once
// The tensor and transformer op types (compile_tensor_nodes.cpp adds them to the table), split
// by family, and what their compilers share: where an ONNX axis lies in a value's batch-first
// layout (batch_layout.h) and the constant inputs they read.
#include "engine/onnx/node_compilers.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mantissa::onnx_import {

void addArithmeticNodeCompilers(NodeCompilerTable& table);    // Add, Sub, Mul, Div, Pow, Sqrt, Erf, Where
void addMatMulNodeCompilers(NodeCompilerTable& table);        // MatMul
void addLayoutNodeCompilers(NodeCompilerTable& table);        // Reshape, Squeeze, Unsqueeze, Transpose, Cast
void addIndexNodeCompilers(NodeCompilerTable& table);         // Gather, Slice, Split, Concat, Expand
void addNormalisationNodeCompilers(NodeCompilerTable& table); // LayerNormalization, Softmax, LogSoftmax, ReduceMean

// ONNX's `axis` (negative counts from the end) of a value of `rank` axes; refuses one outside.
std::size_t normalisedAxis(const OnnxCompiler& c, const OnnxNode& node, std::int64_t axis, std::size_t rank);
// Where non-batch ONNX axis `axis` lies in the expanded per-sample shape; refuses the batch's axis,
// whose values belong to several samples.
std::size_t expandedAxis(const OnnxCompiler& c, const OnnxNode& node, const BatchLayout& layout, std::size_t axis);
// The expanded per-sample shape (batch_layout.h) of the computed value `name`.
std::vector<std::int64_t> expandedOf(const OnnxCompiler& c, const std::string& name);
// Input `input` as a constant of integers (axes, indices, sizes); refuses anything else.
std::vector<std::int64_t> constantInts(const OnnxCompiler& c, const OnnxNode& node, std::size_t input);
// Whether `name` is an ONNX value the node may treat as a float (its element type).
bool isFloatValue(const OnnxCompiler& c, const std::string& name);

} // namespace mantissa::onnx_import
