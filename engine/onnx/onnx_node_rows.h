#pragma once
// An imported model node by node, in the order they run (engine/model/model_file.h's
// ModelFileDescription): what `inspect` lists, whether each node trains, and the precision it
// runs in under a run's precision mode. The workbench's model view shows it.
#include "engine/model/model_file.h"
#include "engine/onnx/onnx_graph.h"

namespace mantissa::onnx_import {

// The parameters `node` reads (its inputs that are trainable initializers).
std::int64_t nodeParameterCount(const OnnxGraph& graph, const OnnxNode& node);

// config.model.onnx imported for config.model.input and compiled under config's precision.
// Throws ConfigError only where the file cannot be imported at all; a model that imports but
// does not compile comes back with its nodes and the problem.
ModelFileDescription describeOnnxModel(const RunConfig& config);

} // namespace mantissa::onnx_import
