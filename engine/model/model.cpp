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

// The validated spec's layers built, named and tied, with the policy's dtypes and the recipe's
// coverage applied (keep_first_last at any depth), but no parameters yet.
std::vector<LayerPtr> buildLayers(const ModelSpec& spec, const PrecisionPolicy& policy, GemmCoverage& coverage,
                                  Shape& output)
{
    const ModelReport report = validateModel(spec);
    if (!report.valid())
        throw ConfigError(report.error);
    std::vector<LayerPtr> layers;
    Shape shape(spec.input);
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
        layers.push_back(std::move(layer));
    }
    std::vector<Layer*> topLevel;
    for (const LayerPtr& l : layers)
        topLevel.push_back(l.get());
    const std::vector<GemmSite> sites = gemmSites(topLevel);
    coverage =
        applyRecipeCoverage(policy.recipe(), sites, keepsFirstAndLastLayers(policy.recipe(), policy.recipeOptions()));
    for (const GemmSite& site : sites)
        checkRecipeFits(site, spec);
    output = shape;
    return layers;
}

} // namespace

GemmCoverage plannedGemmCoverage(const ModelSpec& spec, PrecisionMode mode, const RecipeOptions& recipe)
{
    GemmCoverage coverage;
    Shape output;
    buildLayers(spec, PrecisionPolicy(mode, recipe), coverage, output);
    return coverage;
}

Model::Model(const ModelSpec& spec, PrecisionMode mode, Backend& backend, std::uint64_t seed,
             const RecipeOptions& recipe)
    : m_input(spec.input), m_classes(spec.classes)
{
    const PrecisionPolicy policy(mode, recipe);
    Shape output;
    m_layers = buildLayers(spec, policy, m_gemmCoverage, output);
    for (std::size_t i = 0; i < m_layers.size(); ++i)
        m_layers[i]->createParameters(backend, policy.layer(spec.layers[i].precision).master, seed);
    m_labelsPerSample = output.numel() / m_classes;
    while (m_firstTrainedLayer + 1 < m_layers.size() && m_layers[m_firstTrainedLayer]->parameters().empty())
        ++m_firstTrainedLayer;
    for (auto it = m_layers.rbegin(); it != m_layers.rend(); ++it) {
        auto params = (*it)->parameters();
        // Within a layer, backward writes the weight gradient before the bias gradient.
        m_backwardOrder.insert(m_backwardOrder.end(), params.begin(), params.end());
    }
}

ModelForward Model::forward(PassState& pass, const Tensor& x)
{
    ModelForward result;
    result.contexts.reserve(m_layers.size());
    Tensor activation = x;
    for (std::size_t i = 0; i < m_layers.size(); ++i) {
        Layer* layer = m_layers[i].get();
        if (activation.dtype() != layer->inputType()) {
            Tensor converted = pass.backend.empty(activation.shape(), layer->inputType());
            pass.backend.cast(activation, converted);
            activation = converted;
        }
        pass.layerIndex = i;
        ForwardResult out = layer->forward(pass, activation);
        activation = out.output;
        result.contexts.push_back(std::move(out.context));
        if (pass.tap)
            pass.tap->afterForward(i, activation);
    }
    result.logits = activation;
    return result;
}

void Model::backward(PassState& pass, const Tensor& dlogits, ModelForward& forward)
{
    Tensor gradient = dlogits;
    for (std::size_t i = m_layers.size(); i-- > 0;) {
        if (i < m_firstTrainedLayer) {
            // A flatten or a pooling ahead of the first weights: nothing below needs a gradient
            // (mlp's first linear layer spent an eighth of its fp32 step on the data's).
            forward.contexts[i].reset();
            if (pass.tap)
                pass.tap->afterBackward(i, Tensor());
            continue;
        }
        Layer& layer = *m_layers[i];
        if (gradient.dtype() != layer.computeType()) {
            Tensor converted = pass.backend.empty(gradient.shape(), layer.computeType());
            pass.backend.cast(gradient, converted);
            gradient = converted;
        }
        pass.inputGradNeeded = i > m_firstTrainedLayer;
        gradient = layer.backward(pass, gradient, forward.contexts[i].get());
        forward.contexts[i].reset(); // free saved activations as early as possible
        if (pass.tap)
            pass.tap->afterBackward(i, gradient);
    }
    pass.inputGradNeeded = true;
}

std::vector<std::pair<std::string, Tensor*>> Model::buffers()
{
    std::vector<std::pair<std::string, Tensor*>> all;
    for (auto& layer : m_layers)
        for (auto& b : layer->buffers())
            all.push_back(b);
    return all;
}

std::vector<Layer*> Model::layers()
{
    std::vector<Layer*> out;
    for (auto& l : m_layers)
        out.push_back(l.get());
    return out;
}

} // namespace mantissa
