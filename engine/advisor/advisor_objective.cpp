#include "engine/advisor/advisor_objective.h"

#include "engine/numerics/minifloat_format.h"
#include "engine/precision/precision_policy.h"
#include "engine/util/check.h"

#include <algorithm>

namespace mantissa {

std::optional<AdvisorObjective> parseAdvisorObjective(std::string_view key)
{
    if (key == "flops")
        return AdvisorObjective::Flops;
    if (key == "memory")
        return AdvisorObjective::Memory;
    return std::nullopt;
}

double formatBits(LayerPrecision format, const RecipeOptions& options)
{
    // What the policy makes of a layer in `format`: the recipe quantising its weights, else the
    // type it computes (and keeps its weights) in.
    const LayerDTypes dtypes = PrecisionPolicy(PrecisionMode::Fp32).layer(LayerFormat(format));
    if (dtypes.gemmRecipes.weight == GemmRecipe::None)
        return 8.0 * static_cast<double>(dtypeSize(dtypes.weight));
    return recipeWeightBits(dtypes.gemmRecipes.weight, options);
}

double recipeWeightBits(GemmRecipe recipe, const RecipeOptions& options)
{
    const QuantFormat q = operandFormat(recipe, GemmOperand::Weight, options).format;
    const double element = miniFloatFormat(q.element).bits();
    switch (q.scheme) {
    case ScalingScheme::Mx: return element + 8.0 / static_cast<double>(q.blockSize); // one E8M0 a block
    case ScalingScheme::Nvfp4:
        return element + 8.0 / static_cast<double>(q.blockSize * q.blockRows); // one E4M3 a block or tile
    case ScalingScheme::Fp32Blocks: return element + 32.0 / static_cast<double>(q.blockSize * q.blockRows);
    case ScalingScheme::PerTensor:
    case ScalingScheme::None: return element;
    }
    return element;
}

AssignmentProblem advisorProblem(const std::vector<AdvisorLayer>& layers, const std::vector<LayerCosts>& costs,
                                 const std::vector<LayerPrecision>& formats, const RecipeOptions& options,
                                 AdvisorObjective objective, double budget)
{
    MANTISSA_ASSERT(layers.size() == costs.size());
    AssignmentProblem problem;
    problem.budget = budget;
    for (std::size_t l = 0; l < layers.size(); ++l) {
        const AdvisorLayer& layer = layers[l];
        const double size = static_cast<double>(objective == AdvisorObjective::Flops ? layer.flops : layer.weights);
        std::vector<FormatOption> choices;
        for (std::size_t f = 0; f < formats.size(); ++f) {
            const double saved = std::max(0.0, 1.0 - formatBits(formats[f], options) / layer.baselineBits);
            choices.push_back({costs[l].lossIncrease[f], size * saved, costs[l].allowed[f]});
        }
        problem.layers.push_back(std::move(choices));
    }
    return problem;
}

} // namespace mantissa
