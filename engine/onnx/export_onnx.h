#pragma once
// A trained model written as an ONNX file: an imported model's own graph with each initializer
// that became a parameter or a running statistic replaced by the trained fp32 values, or a
// layer list's model as a new graph (export_layer_list.h); either way importing the file again
// computes what the trained model computes, bit for bit. The written model passes onnx::checker.
#include "engine/config/run_config.h"
#include "engine/model/model.h"

#include <string>

namespace mantissa::onnx_import {

struct ExportSummary {
    std::string source;            // the ONNX file the graph came from; "" for a layer list's new graph
    std::int64_t nodes = 0;        // in the written graph
    std::int64_t initializers = 0; // initializers that took trained values
    std::int64_t parameters = 0;   // of them, trainable parameters (the rest: running statistics)
    std::uint64_t bytes = 0;       // of the written file
};

// `model` was built from `config` (config.model.onnx) and holds the trained weights (a
// checkpoint loaded: loadCheckpointWeights). Writes `outPath`. Throws ConfigError where a layer
// has no ONNX form yet or a tensor has no initializer to take it, IoError where the file cannot
// be written.
ExportSummary exportTrainedOnnx(const RunConfig& config, Model& model, Backend& backend, const std::string& outPath);

} // namespace mantissa::onnx_import
