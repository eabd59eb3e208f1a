#pragma once
// The ONNX forms of single layers that more than one family of the layer-list export uses
// (export_layer_list.cpp, export_transformer.cpp). Each appends its nodes through `w`, reads
// the value `input` and returns the value it writes; the maths is the layer's own, op for op, so
// that the import computes the same bits.
#include "engine/model/layers/conv2d.h"
#include "engine/model/layers/linear.h"
#include "engine/onnx/onnx_graph_writer.h"

#include <string>

namespace mantissa::onnx_import {

// A convolution as Conv, named `name`.
std::string writeConv(OnnxGraphWriter& w, Conv2d& layer, const std::string& input, const std::string& name);

// A linear layer on [N, in] as Gemm (transB = 1, the weight [out, in] as PyTorch's). On
// [N, T, in] (tokens() > 1) the rows are flattened to [N T, in] for the Gemm and the result
// unflattened to [N, T, out], which is the layer's one GEMM over N T rows. A head tied to the
// token embedding reads `tiedTable` (the embedding's initializer) through a Transpose in a
// MatMul, which the import compiles as a head sharing the embedding's table.
std::string writeLinear(OnnxGraphWriter& w, Linear& layer, const std::string& input, const std::string& tiedTable);

// The Gemm of a linear layer on rows [R, in] already flattened (several projections share them).
std::string writeLinearRows(OnnxGraphWriter& w, Linear& layer, const std::string& rows);

// GELU in its exact erf form as opset 17 writes it (there is no Gelu op before opset 20), in
// PyTorch's order: x * (1 + erf(x / sqrt 2)) * 0.5; the import compiles these five nodes back
// into one GELU (compile_gelu_pattern.cpp). The last node is `name`.
std::string writeGelu(OnnxGraphWriter& w, const std::string& input, const std::string& name);

} // namespace mantissa::onnx_import
