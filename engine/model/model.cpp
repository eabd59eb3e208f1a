#include "engine/model/model.h"

#include "engine/model/compile_layer_list.h"

namespace mantissa {

GemmCoverage plannedGemmCoverage(const ModelSpec& spec, PrecisionMode mode, const RecipeOptions& recipe)
{
    return compileLayerList(spec, PrecisionPolicy(mode, recipe)).coverage;
}

Model::Model(const ModelSpec& spec, PrecisionMode mode, Backend& backend, std::uint64_t seed,
             const RecipeOptions& recipe)
    : m_input(spec.input), m_classes(spec.classes)
{
    const PrecisionPolicy policy(mode, recipe);
    CompiledLayerList compiled = compileLayerList(spec, policy);
    m_graph = std::move(compiled.graph);
    m_gemmCoverage = std::move(compiled.coverage);
    // The layers of the list own their parameters (a block creates its parts'), each with the
    // master dtype its override resolves to.
    const std::vector<Layer*> built = layers();
    for (std::size_t i = 0; i < spec.layers.size(); ++i)
        built[i]->createParameters(backend, policy.layer(spec.layers[i].precision).master, seed);
    m_labelsPerSample = compiled.output.numel() / m_classes;
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
