#include "engine/advisor/rules_of_thumb.h"

#include "engine/model/model.h"

#include <algorithm>

namespace mantissa {

std::vector<RuleOfThumb> rulesOfThumb(const std::vector<AdvisorLayer>& layers, const std::vector<bool>& fits,
                                      const std::vector<std::string>& keptByFirstLast)
{
    RuleOfThumb firstLast{"keep-first-last", {}}, last16{"keep-last-16%", {}}, multiples{"multiples-of-16", {}};
    const std::size_t n = layers.size();
    // The last 16% rounded up: at least one layer of any model stays.
    const std::size_t keptAtEnd = (n * 16 + 99) / 100;
    for (std::size_t i = 0; i < n; ++i) {
        if (!fits[i])
            continue;
        const AdvisorLayer& layer = layers[i];
        if (std::find(keptByFirstLast.begin(), keptByFirstLast.end(), layer.name) == keptByFirstLast.end())
            firstLast.low.push_back(layer.name);
        if (i + keptAtEnd < n)
            last16.low.push_back(layer.name);
        if (std::all_of(layer.widths.begin(), layer.widths.end(), [](const auto& w) { return w.second % 16 == 0; }))
            multiples.low.push_back(layer.name);
    }
    return {firstLast, last16, multiples};
}

std::vector<std::string> layersKeptFirstAndLast(const ModelSpec& spec)
{
    // The rule asked of the engine as an 8-bit recipe run with keep_first_last on would apply it
    // (mxfp8 takes every shape, so no layer is refused on the way).
    RecipeOptions options;
    options.keepFirstLast = RecipeSwitch::On;
    ModelSpec plain = spec;
    plain.precisionOverrides.clear();
    std::vector<std::string> kept;
    for (const GemmCoverageEntry& entry : plannedGemmCoverage(plain, PrecisionMode::Mxfp8, options).gemms)
        if (entry.kept == GemmKeptReason::FirstGemm || entry.kept == GemmKeptReason::LastGemm)
            kept.push_back(entry.layer);
    return kept;
}

} // namespace mantissa
