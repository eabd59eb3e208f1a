#pragma once
// Reads a serialised onnx.TensorProto (the input_K.pb and output_K.pb files of ONNX's backend
// test data) into an OnnxTensor; throws OnnxImportError naming the file when it is not one.
#include "engine/onnx/onnx_graph.h"

#include <string>

namespace mantissa::onnx_import {

OnnxTensor readTensorProtoFile(const std::string& path);

} // namespace mantissa::onnx_import
