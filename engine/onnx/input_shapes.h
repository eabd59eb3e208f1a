#pragma once
// Fixes the dimensions of the graph inputs: the first dimension of every input is the batch
// (the file's, or ImportOptions::batchSize where the file leaves it dynamic); the others of the
// first input come from ImportOptions::sampleShape where the file leaves them dynamic, and
// must equal it where the file fixes them.
#include "engine/onnx/import_onnx.h"

#include <onnx/onnx_pb.h>

namespace mantissa::onnx_import {

// The graph inputs fed with data: graph inputs that are not initializers (models of IR
// version 3 list their initializers among the inputs).
std::vector<const onnx::ValueInfoProto*> dataInputs(const onnx::GraphProto& graph);

// Turns the inputs ImportOptions::fixedInputs names into Constant nodes holding their values.
void fixInputValues(onnx::ModelProto& model, const std::vector<OnnxTensor>& values, const std::string& path);

// Returns the batch size. Throws OnnxImportError naming `path` and the input.
std::int64_t fixInputShapes(onnx::ModelProto& model, const ImportOptions& options, const std::string& path);

} // namespace mantissa::onnx_import
