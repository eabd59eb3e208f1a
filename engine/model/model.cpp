#include "engine/model/model.h"

#include "engine/model/compile_layer_list.h"
#include "engine/model/layer_formats.h"
#include "engine/model/model_file.h"
#include "engine/model/model_validation.h"

namespace mantissa {

namespace {

// A model is a layer list or a file, never both (validateModel refuses a config naming both).
bool isModelFile(const ModelSpec& spec)
{
    if (spec.onnx.empty())
        return false;
    if (const ModelReport report = validateModel(spec); !report.valid())
        throw ConfigError(report.error);
    return true;
}

} // namespace

GemmCoverage plannedGemmCoverage(const ModelSpec& spec, PrecisionMode mode, const RecipeOptions& recipe)
{
    const PrecisionPolicy policy(mode, recipe, {}, spec.precisionOverrides);
    if (isModelFile(spec))
        return compileModelFile(spec, policy, nullptr).coverage;
    return compileLayerList(spec, policy).coverage;
}

Model::Model(const ModelSpec& spec, PrecisionMode mode, Backend& backend, std::uint64_t seed,
             const RecipeOptions& recipe, const UpdatePrecision& update)
    : m_input(spec.input), m_classes(spec.classes)
{
    const PrecisionPolicy policy(mode, recipe, update, spec.precisionOverrides);
    if (isModelFile(spec)) {
        // The file's parameters are created and loaded by its compiler: the seed draws nothing.
        CompiledModelFile compiled = compileModelFile(spec, policy, &backend);
        m_graph = std::move(compiled.graph);
        m_gemmCoverage = std::move(compiled.coverage);
        checkBackendRunsFormats(gemmSites(*m_graph), backend);
        m_labelsPerSample = compiled.output.numel() / m_classes;
        m_backwardOrder = m_graph->parametersInBackwardOrder();
        return;
    }
    CompiledLayerList compiled = compileLayerList(spec, policy);
    m_graph = std::move(compiled.graph);
    m_gemmCoverage = std::move(compiled.coverage);
    checkBackendRunsFormats(gemmSites(*m_graph), backend);
    // The layers of the list own their parameters (a block creates its parts'), each with the
    // master dtype its override resolves to.
    const std::vector<Layer*> built = layers();
    for (std::size_t i = 0; i < spec.layers.size(); ++i)
        built[i]->createParameters(
            backend, policy.layerNamed(built[i]->name(), policy.layer(spec.layers[i].precision)).master, seed);
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
