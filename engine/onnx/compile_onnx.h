#pragma once
// An imported ONNX graph (onnx_graph.h) compiled into the engine's model graph
// (engine/model/graph/graph.h): each ONNX node becomes one group of ops, named by the node, whose
// layers take the precision policy's dtypes as a preset's layers do, so every mode and recipe
// applies unchanged. The ONNX initializers become the layers' trainable parameters, named by
// their initializer names (what checkpoints and reports call them) and starting from the file's
// values, with fp32 masters unless the mode keeps pure 16-bit masters.
//
// Which op types compile is node_compilers.h's table (docs/onnx.md lists them); any other node
// is a ConfigError naming it, even where the import accepts it.
#include "engine/model/gemm_coverage.h"
#include "engine/model/graph/graph.h"
#include "engine/onnx/onnx_graph.h"

#include <memory>
#include <set>

namespace mantissa::onnx_import {

struct CompiledOnnx {
    std::unique_ptr<Graph> graph; // parameters created and loaded
    GemmCoverage coverage;
    Shape output; // per sample
    // Initializers whose parameters hold their transpose (OnnxCompiler::holdTransposed).
    std::set<std::string> transposedInitializers;
};

// `onnx` must have one data input (the batch) and one output (the logits). Throws ConfigError
// naming the node that cannot compile, and why.
CompiledOnnx compileOnnx(const OnnxGraph& onnx, const PrecisionPolicy& policy, Backend& backend);

} // namespace mantissa::onnx_import
