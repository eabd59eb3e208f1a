#include "engine/model/model.h"

#include "engine/model/gemm_coverage.h"
#include "engine/model/layer_factory.h"
#include "engine/model/layers/linear.h"
#include "engine/model/layers/token_embedding.h"
#include "engine/model/model_validation.h"
#include "engine/util/check.h"

#include <algorithm>

namespace mantissa {

namespace {

// NVFP4 refuses partial blocks (its 16-element blocks are what the hardware reads, NVIDIA's
// recipe keeps such layers in bf16): every width a quantised GEMM's blocks run along must be a
// multiple of 16, at any depth.
void checkRecipeFits(const GemmSite& site, const ModelSpec& spec)
{
    const GemmRecipe recipe = site.layer->gemmRecipe();
    if (recipe != GemmRecipe::Nvfp4)
        return;
    const std::size_t block = recipeBlockSize(recipe);
    for (const auto& [field, width] : site.layer->blockedWidths())
        if (width % static_cast<std::int64_t>(block) != 0)
            throw ConfigError("layer " + std::to_string(site.topLevel) + " (" +
                              std::string(enumKey(spec.layers[site.topLevel].type)) + "): " + gemmRecipeName(recipe) +
                              " quantises blocks of " + std::to_string(block) + " along K, but " + site.layer->name() +
                              "'s " + field + " (" + std::to_string(width) + ") is not a multiple of " +
                              std::to_string(block) +
                              "; keep the layer in bf16 (\"precision\": \"bf16\") or change its width");
}

// The validated spec's layers built, named, tied and given the policy's dtypes, compiled into
// a graph with the recipe's coverage applied (keep_first_last at any depth), but no parameters
// yet. Each layer of the list is one group of the graph.
std::unique_ptr<Graph> buildGraph(const ModelSpec& spec, const PrecisionPolicy& policy, GemmCoverage& coverage,
                                  Shape& output)
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
        layer->applyPrecision(policy, policy.layer(spec.layers[i].precision));
        graph->beginGroup(layer->name(), layer->computeType());
        value = graph->own(std::move(layer))->appendTo(*graph, value);
    }
    graph->setOutput(value);
    const std::vector<GemmSite> sites = gemmSites(*graph);
    coverage =
        applyRecipeCoverage(policy.recipe(), sites, keepsFirstAndLastLayers(policy.recipe(), policy.recipeOptions()));
    for (const GemmSite& site : sites)
        checkRecipeFits(site, spec);
    output = shape;
    return graph;
}

} // namespace

GemmCoverage plannedGemmCoverage(const ModelSpec& spec, PrecisionMode mode, const RecipeOptions& recipe)
{
    GemmCoverage coverage;
    Shape output;
    buildGraph(spec, PrecisionPolicy(mode, recipe), coverage, output);
    return coverage;
}

Model::Model(const ModelSpec& spec, PrecisionMode mode, Backend& backend, std::uint64_t seed,
             const RecipeOptions& recipe)
    : m_input(spec.input), m_classes(spec.classes)
{
    const PrecisionPolicy policy(mode, recipe);
    Shape output;
    m_graph = buildGraph(spec, policy, m_gemmCoverage, output);
    // The layers of the list own their parameters (a block creates its parts'), each with the
    // master dtype its override resolves to.
    const std::vector<Layer*> built = layers();
    for (std::size_t i = 0; i < spec.layers.size(); ++i)
        built[i]->createParameters(backend, policy.layer(spec.layers[i].precision).master, seed);
    m_labelsPerSample = output.numel() / m_classes;
    m_backwardOrder = m_graph->parametersInBackwardOrder();
}

ModelForward Model::forward(PassState& pass, const Tensor& x)
{
    ModelForward result;
    result.graph = m_graph->forward(pass, x);
    result.logits = result.graph.output;
    return result;
}

void Model::backward(PassState& pass, const Tensor& dlogits, ModelForward& forward)
{
    m_graph->backward(pass, dlogits, forward.graph, false);
    pass.inputGradNeeded = true;
}

std::vector<Layer*> Model::layers() { return m_graph->ownedLayers(); }

} // namespace mantissa
