#pragma once
// Between onnx.TensorProto and OnnxTensor. Internal to the import: the only header besides
// the .cpp files that includes ONNX's generated protobuf classes.
#include "engine/onnx/onnx_graph.h"

#include <onnx/onnx_pb.h>

#include <string>

namespace mantissa::onnx_import {

// Throws OnnxImportError "`where`: ..." when the tensor is a string tensor, keeps its data in
// a file (load external data first), or holds a number of values its dimensions do not.
OnnxTensor tensorFromProto(const onnx::TensorProto& proto, const std::string& where);
// Float32, Float64, the integer types and Bool; the caller keeps Float16 and BFloat16 out.
onnx::TensorProto tensorToProto(const OnnxTensor& tensor);
bool canWriteToProto(ElementType type);

} // namespace mantissa::onnx_import
