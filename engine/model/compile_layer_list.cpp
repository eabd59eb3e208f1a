#include "engine/model/compile_layer_list.h"

#include "engine/model/layer_factory.h"
#include "engine/model/layer_formats.h"
#include "engine/model/layers/linear.h"
#include "engine/model/layers/token_embedding.h"
#include "engine/model/model_validation.h"
#include "engine/util/check.h"

namespace mantissa {

namespace {

// NVFP4 refuses partial blocks (its 16-element blocks are what the hardware reads, NVIDIA's
// recipe keeps such layers in bf16): every width a quantised GEMM's blocks run along must be a
// multiple of 16, at any depth.
void checkRecipeFits(const GemmSite& site, const ModelSpec& spec)
{
    const std::optional<std::string> misfit = nvfp4Misfit(*site.layer);
    if (!misfit)
        return;
    // A layer following the run's nvfp4 says so; one whose format was stated names it.
    const std::string format = site.layer->formatLabel();
    const std::string what =
        site.layer->formatStated() ? site.layer->name() + " runs in " + format + ": nvfp4" : format;
    throw ConfigError(
        "layer " + std::to_string(site.topLevel) + " (" + std::string(enumKey(spec.layers[site.topLevel].type)) +
        "): " + what + " quantises blocks of 16 along K, but " + *misfit +
        "; keep the layer in bf16 (\"precision\": "
        "\"bf16\"" +
        (site.layer->formatStated() ? ", or its entry in model.precision_overrides" : "") + ") or change its width");
}

} // namespace

CompiledLayerList compileLayerList(const ModelSpec& spec, const PrecisionPolicy& policy)
{
    const ModelReport report = validateModel(spec);
    if (!report.valid())
        throw ConfigError(report.error);
    Shape shape(spec.input);
    auto graph = std::make_unique<Graph>(shape);
    ValueId value = graph->input();
    TokenEmbedding* embedding = nullptr; // the first one, which a tied head shares (validated)
    for (std::size_t i = 0; i < spec.layers.size(); ++i) {
        LayerPtr layer = createLayer(spec.layers[i], shape);
        shape = perSampleOutput(*layer, shape);
        layer->setName(std::to_string(i) + "." + std::string(enumKey(layer->kind())));
        if (auto* e = dynamic_cast<TokenEmbedding*>(layer.get()); e && !embedding)
            embedding = e;
        if (spec.layers[i].tied) {
            // The validator checked the extents, the dtype and that no activation wraps it.
            auto* head = dynamic_cast<Linear*>(layer.get());
            MANTISSA_ASSERT(head && embedding);
            head->tieWeight(embedding->table());
            embedding->setTableShared(true);
        }
        layer->applyPrecision(policy, policy.layerNamed(layer->name(), policy.layer(spec.layers[i].precision)));
        graph->beginGroup(layer->name(), layer->computeType());
        value = graph->own(std::move(layer))->appendTo(*graph, value);
    }
    graph->setOutput(value);
    CompiledLayerList compiled;
    const std::vector<GemmSite> sites = gemmSites(*graph);
    compiled.coverage =
        applyRecipeCoverage(policy.recipe(), sites, keepsFirstAndLastLayers(policy.recipe(), policy.recipeOptions()));
    for (const GemmSite& site : sites)
        checkRecipeFits(site, spec);
    checkOverridesNameLayers(*graph, policy.overrides());
    compiled.graph = std::move(graph);
    compiled.output = shape;
    return compiled;
}

} // namespace mantissa
