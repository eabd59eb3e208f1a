#include "engine/model/layer_formats.h"

#include "engine/util/check.h"

#include <set>

namespace mantissa {

namespace {

void collect(const Layer& layer, std::set<const Layer*>& seen, std::vector<const Layer*>& out)
{
    if (!seen.insert(&layer).second)
        return;
    out.push_back(&layer);
    // sublayers() only lists the holder's members; nothing here changes them.
    for (const Sublayer& s : const_cast<Layer&>(layer).sublayers())
        collect(*s.layer, seen, out);
}

} // namespace

std::vector<const Layer*> layersAtAnyDepth(const Graph& graph)
{
    std::set<const Layer*> seen;
    std::vector<const Layer*> layers;
    for (const GraphNode& node : graph.nodes())
        if (const Layer* layer = node.op->layer())
            collect(*layer, seen, layers);
    for (const Layer* layer : graph.ownedLayers())
        collect(*layer, seen, layers);
    return layers;
}

void checkOverridesNameLayers(const Graph& graph, const PrecisionOverrides& overrides)
{
    if (overrides.empty())
        return;
    const std::vector<const Layer*> layers = layersAtAnyDepth(graph);
    for (const auto& [pattern, format] : overrides) {
        bool matched = false;
        for (const Layer* layer : layers)
            matched = matched || nameMatches(pattern, layer->name());
        if (matched)
            continue;
        std::string names;
        std::size_t listed = 0;
        for (const Layer* layer : layers)
            if (layer->runsGemms() && listed++ < 40)
                names += (names.empty() ? "" : ", ") + layer->name();
        if (listed > 40)
            names += ", ... (" + std::to_string(listed - 40) + " more)";
        throw ConfigError("model.precision_overrides: \"" + pattern + "\" (" + layerFormatText(format) +
                          ") names no layer of the model; the layers that run GEMMs are " +
                          (names.empty() ? std::string("none") : names));
    }
}

std::optional<std::string> nvfp4Misfit(const Layer& layer)
{
    const OperandRecipes& recipes = layer.gemmRecipes();
    if (recipes.activation != GemmRecipe::Nvfp4 && recipes.weight != GemmRecipe::Nvfp4 &&
        recipes.gradient != GemmRecipe::Nvfp4)
        return std::nullopt;
    const auto block = static_cast<std::int64_t>(recipeBlockSize(GemmRecipe::Nvfp4));
    for (const auto& [field, width] : layer.blockedWidths())
        if (width % block != 0)
            return layer.name() + "'s " + field + " (" + std::to_string(width) + ") is not a multiple of " +
                   std::to_string(block);
    return std::nullopt;
}

void checkBackendRunsFormats(const std::vector<GemmSite>& sites, const Backend& backend)
{
    if (backend.device().kind == DeviceKind::Cpu)
        return;
    for (const GemmSite& site : sites) {
        const Layer& layer = *site.layer;
        const OperandRecipes& recipes = layer.gemmRecipes();
        if (!recipes.any() || (recipes.uniform() && layer.computeType() == DType::BF16))
            continue;
        throw ConfigError("layer " + layer.name() + " runs in " + layer.formatLabel() + ", computing in " +
                          std::string(dtypeName(layer.computeType())) +
                          ": the GPU backend multiplies a GEMM's two inputs in one type, so a layer quantised there "
                          "takes one recipe for its inputs, weights and gradients and computes in bf16; per-role "
                          "formats, and a recipe inside a layer computing in fp32 or fp16, run on the CPU");
    }
}

} // namespace mantissa
