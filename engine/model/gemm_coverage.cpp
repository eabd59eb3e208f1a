#include "engine/model/gemm_coverage.h"

namespace mantissa {

namespace {

void collect(Layer& layer, std::size_t topLevel, bool sameInput, std::vector<GemmSite>& out)
{
    if (layer.runsGemms())
        out.push_back({&layer, topLevel, sameInput});
    for (const Sublayer& s : layer.sublayers()) {
        // The flag belongs to the first GEMM site the sublayer holds.
        collect(*s.layer, topLevel, s.sameInputAsPrevious, out);
    }
}

} // namespace

std::vector<GemmSite> gemmSites(const Graph& graph)
{
    std::vector<GemmSite> sites;
    for (const GraphNode& node : graph.nodes())
        if (Layer* layer = node.op->layer())
            collect(*layer, node.group, false, sites);
    return sites;
}

GemmCoverage applyRecipeCoverage(GemmRecipe recipe, const std::vector<GemmSite>& sites, bool keep)
{
    GemmCoverage coverage;
    coverage.recipe = recipe;
    std::vector<GemmKeptReason> kept(sites.size(), GemmKeptReason::None);
    if (keep && !sites.empty()) {
        kept[0] = GemmKeptReason::FirstGemm;
        for (std::size_t i = 1; i < sites.size() && sites[i].sameInputAsPrevious; ++i)
            kept[i] = GemmKeptReason::FirstGemm;
        if (kept.back() == GemmKeptReason::None)
            kept.back() = GemmKeptReason::LastGemm;
    }
    for (std::size_t i = 0; i < sites.size(); ++i) {
        Layer& layer = *sites[i].layer;
        GemmCoverageEntry entry{layer.name(), false, GemmKeptReason::None, {}};
        if (layer.quantisesGemms() && kept[i] != GemmKeptReason::None && !layer.formatStated()) {
            layer.keepGemmsUnquantised();
            entry.kept = kept[i];
        } else if (layer.quantisesGemms()) {
            entry.quantised = true;
        } else if (recipe != GemmRecipe::None) {
            entry.kept = GemmKeptReason::LayerOverride;
        }
        entry.format = layer.formatLabel();
        coverage.gemms.push_back(std::move(entry));
    }
    return coverage;
}

std::size_t GemmCoverage::quantisedCount() const
{
    std::size_t n = 0;
    for (const GemmCoverageEntry& g : gemms)
        n += g.quantised ? 1 : 0;
    return n;
}

std::vector<std::string> GemmCoverage::quantisedLayers() const
{
    std::vector<std::string> names;
    for (const GemmCoverageEntry& g : gemms)
        if (g.quantised)
            names.push_back(g.layer);
    return names;
}

std::string keptReasonText(GemmKeptReason reason)
{
    switch (reason) {
    case GemmKeptReason::None: return "quantised";
    case GemmKeptReason::FirstGemm: return "keep_first_last: the first GEMM";
    case GemmKeptReason::LastGemm: return "keep_first_last: the last GEMM";
    case GemmKeptReason::LayerOverride: return "its layer's precision";
    }
    return {};
}

std::string GemmCoverage::summary() const
{
    if (recipe == GemmRecipe::None && quantisedCount() == 0)
        return {};
    const std::string counted =
        std::to_string(quantisedCount()) + " of " + std::to_string(gemms.size()) + " GEMMs quantised";
    std::string own; // quantised layers in a format other than the run's recipe
    for (const GemmCoverageEntry& g : gemms)
        if (g.quantised && (recipe == GemmRecipe::None || g.format != gemmRecipeName(recipe)))
            own += (own.empty() ? "" : ", ") + g.layer + " (" + g.format + ")";
    if (recipe == GemmRecipe::None)
        return "per-layer formats: " + counted + ": " + own;
    std::string text = gemmRecipeName(recipe) + ": " + counted;
    std::string keptList;
    for (const GemmCoverageEntry& g : gemms)
        if (!g.quantised)
            keptList += (keptList.empty() ? "" : ", ") + g.layer + " (" + keptReasonText(g.kept) + ")";
    if (!keptList.empty())
        text += "; kept unquantised: " + keptList;
    if (!own.empty())
        text += "; in their own formats: " + own;
    return text;
}

std::optional<std::string> GemmCoverage::warning() const
{
    if (recipe == GemmRecipe::None || quantisedCount() > 0)
        return std::nullopt;
    return gemmRecipeName(recipe) + " quantises none of this model's " + std::to_string(gemms.size()) +
           " GEMMs, so the run trains as mixed-bf16: " +
           (gemms.empty() ? std::string("the model has no linear or conv2d layer")
                          : "every GEMM is kept (set precision.recipe.keep_first_last to \"off\" or remove the "
                            "layers' \"precision\" overrides)");
}

} // namespace mantissa
