#pragma once
// The checks that a model's per-layer formats (a layer's "precision", model.precision_overrides)
// fit the compiled model: every override names a layer, every NVFP4 layer's blocks are whole,
// and the backend multiplies what the formats ask of it.
#include "engine/backend/backend.h"
#include "engine/model/gemm_coverage.h"
#include "engine/precision/precision_policy.h"

#include <optional>
#include <string>
#include <vector>

namespace mantissa {

// Every layer of `graph` at any depth (the layers behind its nodes and those they hold), by its
// full name, in the order the graph runs them.
std::vector<const Layer*> layersAtAnyDepth(const Graph& graph);

// ConfigError naming the entry and the layers that run GEMMs where an entry of
// model.precision_overrides matches no layer of `graph`.
void checkOverridesNameLayers(const Graph& graph, const PrecisionOverrides& overrides);

// Where a layer quantises a role in NVFP4 (whose 16-element blocks admit no partial block) and a
// width its blocks run along is not a multiple of 16: "2.transformer.mlp.up's in features (100)
// is not a multiple of 16"; nothing otherwise.
std::optional<std::string> nvfp4Misfit(const Layer& layer);

// ConfigError where a GEMM layer's format is one `backend` cannot multiply: off the CPU, a
// layer's roles must share one recipe in bf16 (as a run-wide recipe gives every layer), since
// the GPU's GEMMs multiply two operands of one type.
void checkBackendRunsFormats(const std::vector<GemmSite>& sites, const Backend& backend);

} // namespace mantissa
