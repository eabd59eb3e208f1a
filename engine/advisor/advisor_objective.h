#pragma once
// What the precision advisor maximises (docs/advisor.md): the layers' FLOPs (or their weights'
// memory) put in lower formats, each weighted by the share of bits its format saves against
// the layer's baseline, 1 - bits(format) / bits(baseline). With one format asked for, this is
// the FLOP (or weight) share in that format; with several, a 4-bit format counts for more than
// an 8-bit one on the same layer, as it saves more memory traffic and, on hardware that runs
// it natively, more time.
#include "engine/advisor/format_assignment.h"
#include "engine/advisor/precision_probe.h"

#include <optional>
#include <string>
#include <vector>

namespace mantissa {

enum class AdvisorObjective : std::uint8_t { Flops, Memory };
std::optional<AdvisorObjective> parseAdvisorObjective(std::string_view key); // "flops", "memory"

// The bits one weight takes in `format`: its element's bits plus its share of the block or
// tensor scale (MXFP8 8.25, MXFP4 4.25, NVFP4 4.5); 32, 16 for the unquantised types.
double formatBits(LayerPrecision format, const RecipeOptions& options);
// The same for a weight that `recipe` quantises.
double recipeWeightBits(GemmRecipe recipe, const RecipeOptions& options);

// Per layer and format (formats' order): the probe's or the score's loss increase, and
// whether the layer can take the format at all.
struct LayerCosts {
    std::vector<double> lossIncrease; // one per format
    std::vector<bool> allowed;        // one per format
};

// The assignment problem of `layers` (the probe's, with their baseline bits) for `formats`.
AssignmentProblem advisorProblem(const std::vector<AdvisorLayer>& layers, const std::vector<LayerCosts>& costs,
                                 const std::vector<LayerPrecision>& formats, const RecipeOptions& options,
                                 AdvisorObjective objective, double budget);

} // namespace mantissa
