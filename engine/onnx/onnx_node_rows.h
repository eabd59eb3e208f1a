#pragma once
// An imported model node by node, in the order they run (engine/model/model_file.h's
// ModelFileDescription): what `inspect` lists, whether each node trains, and the precision it
// runs in under a run's precision mode. The workbench's model view shows it.
#include "engine/model/model_file.h"
#include "engine/model/tensor_core_alignment.h"
#include "engine/onnx/onnx_graph.h"

#include <map>
#include <optional>
#include <string>

namespace mantissa::onnx_import {

// How one compiled node runs under a precision policy.
struct NodePrecision {
    // The dtype its ops compute in ("bf16"), or the recipe's format for a GEMM it quantises
    // ("mxfp8 GEMM"), or, in a recipe run, why the recipe keeps it ("bf16, keep_first_last: the
    // first GEMM").
    std::string precision;
    // For a node whose layer runs GEMMs (Gemm, MatMul with a weight, Conv, ConvTranspose): the
    // tensor-core alignment its extents meet under that format (tensor_core_alignment.h).
    std::optional<LayerAlignment> alignment;
};

// `onnx` compiled under `policy`, node by node (by name). Throws ConfigError where it does not
// compile (a node, or an NVFP4 width that leaves a partial block).
std::map<std::string, NodePrecision> nodePrecisions(const OnnxGraph& onnx, const PrecisionPolicy& policy);

// The parameters `node` reads (its inputs that are trainable initializers).
std::int64_t nodeParameterCount(const OnnxGraph& graph, const OnnxNode& node);

// config.model.onnx imported for config.model.input and compiled under config's precision.
// Throws ConfigError only where the file cannot be imported at all; a model that imports but
// does not compile comes back with its nodes and the problem.
ModelFileDescription describeOnnxModel(const RunConfig& config);

} // namespace mantissa::onnx_import
