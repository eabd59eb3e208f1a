#pragma once
// Reads an ONNX file into a ModelProto: parsed by protobuf, external data loaded, opset and
// structure checked (onnx::checker). Throws OnnxImportError naming the file and the problem.
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>

namespace mantissa::onnx_import {

// The newest default-domain opset the linked ONNX (1.12) defines.
constexpr std::int64_t kNewestOpset = 17;

// `byteBudget` bounds what is read (the file and its external data); 0: no bound.
onnx::ModelProto loadModelFile(const std::string& path, std::uint64_t byteBudget);

// The model's default-domain opset (0 when it imports none).
std::int64_t defaultOpset(const onnx::ModelProto& model);

} // namespace mantissa::onnx_import
