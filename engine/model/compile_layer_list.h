#pragma once
// The JSON layer list (presets, the model editor) compiled into a model graph: each entry built
// (layer_factory), named ("3.residual"), tied to the embedding where it says so and given its
// dtypes by the precision policy and its override, then added as one group of nodes
// (Layer::appendTo), with the recipe's coverage applied (keep_first_last at any depth).
#include "engine/config/run_config.h"
#include "engine/model/gemm_coverage.h"
#include "engine/model/graph/graph.h"

#include <memory>

namespace mantissa {

struct CompiledLayerList {
    std::unique_ptr<Graph> graph; // no parameters yet: the layers create them
    GemmCoverage coverage;
    Shape output; // per sample
};

// Validates the spec (ConfigError "layer 5 (linear): ..." on failure); a GEMM whose widths the
// recipe's blocks do not divide is a ConfigError naming it.
CompiledLayerList compileLayerList(const ModelSpec& spec, const PrecisionPolicy& policy);

} // namespace mantissa
