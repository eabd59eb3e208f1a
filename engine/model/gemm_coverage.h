#pragma once
// Which of a model's GEMMs a sub-16-bit recipe quantises, at any depth: the walk over the
// layers that run GEMMs (a transformer block's query, key, value and output projections, its
// MLP's two, a patch embedding's projection, a tied head), the rule that keeps the first and
// the last of them in bf16 (precision.recipe.keep_first_last), and the sentence the workbench,
// `mantissa-cli show` and reports print ("mxfp8: 25 of 25 GEMMs quantised").
//
// keep_first_last keeps the first and the last GEMM in the order the model runs them. The
// first counts the GEMMs that read the same input with it (a transformer's query, key and value
// projections: one fused QKV GEMM in Transformer Engine and Megatron-LM). This is the rule of
// the MX training recipe (Rouhani et al. 2023, "Microscaling Data Formats for Deep Learning",
// first and last layers in higher precision) and of torchao's float8 examples, which skip the
// first and the last linear module; NVIDIA's NVFP4 recipe keeps the last layers high too.
#include "engine/model/graph/graph.h"
#include "engine/model/layer.h"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace mantissa {

// One layer that runs GEMMs, found at any depth.
struct GemmSite {
    Layer* layer = nullptr;
    std::size_t topLevel = 0; // the graph group (the layer of the list) that holds it
    // Reads the input of the GEMM site before it (sublayers' sameInputAsPrevious).
    bool sameInputAsPrevious = false;
};

// Every layer that runs GEMMs, at any depth, in the order the graph's forward runs them: the
// layers behind its nodes and the layers they hold.
std::vector<GemmSite> gemmSites(const Graph& graph);

// Why a GEMM of a recipe run is not quantised.
enum class GemmKeptReason : std::uint8_t {
    None,          // quantised (or no recipe)
    FirstGemm,     // keep_first_last: among the first GEMMs the model runs
    LastGemm,      // keep_first_last: the last GEMM the model runs
    LayerOverride, // its layer's "precision" (fp32, fp16, bf16) leaves its GEMMs unquantised
};

struct GemmCoverageEntry {
    std::string layer; // the full name, "2.transformer.attention.query"
    bool quantised = false;
    GemmKeptReason kept = GemmKeptReason::None;
    std::string format; // the layer's format once the rule is applied (Layer::formatLabel)
};

struct GemmCoverage {
    GemmRecipe recipe = GemmRecipe::None; // the run's
    std::vector<GemmCoverageEntry> gemms; // in the order the model runs them

    std::size_t quantisedCount() const;
    std::vector<std::string> quantisedLayers() const;
    // "mxfp8: 25 of 25 GEMMs quantised", "nvfp4: 23 of 25 GEMMs quantised; kept in bf16:
    // 1.patch_embedding (keep_first_last: the first GEMM), 8.linear (keep_first_last: the last
    // GEMM)", with "; in their own formats: 2.linear (mxfp4)" where layers state other formats;
    // "per-layer formats: 2 of 25 GEMMs quantised (...)" for a run without a recipe whose layers
    // state some; empty where nothing is quantised and the run has no recipe.
    std::string summary() const;
    // Set when the run has a recipe and it quantises no GEMM at all, so that the run is
    // mixed-bf16 under another name.
    std::optional<std::string> warning() const;
};

// Applies keep_first_last to `sites` (the recipe's first and last GEMMs keep their layers'
// compute type, unquantised, where `keep`, unless their format was stated: Layer::formatStated)
// and says what the recipe covers.
GemmCoverage applyRecipeCoverage(GemmRecipe recipe, const std::vector<GemmSite>& sites, bool keep);

// Why: "keep_first_last: the first GEMM".
std::string keptReasonText(GemmKeptReason reason);

} // namespace mantissa
