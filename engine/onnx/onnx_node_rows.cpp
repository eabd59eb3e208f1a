#include "engine/onnx/onnx_node_rows.h"

#include "engine/model/layer_formats.h"
#include "engine/onnx/compile_onnx.h"
#include "engine/onnx/import_onnx.h"
#include "engine/onnx/node_compilers.h"

namespace mantissa::onnx_import {

std::map<std::string, NodePrecision> nodePrecisions(const OnnxGraph& onnx, const PrecisionPolicy& policy)
{
    const std::unique_ptr<Backend> scratch = makeCpuBackend(1);
    const CompiledOnnx compiled = compileOnnx(onnx, policy, *scratch);
    std::map<std::string, NodePrecision> nodes;
    for (const GraphGroup& group : compiled.graph->groups())
        nodes[group.name].precision = std::string(dtypeName(group.computeType));
    // A GEMM's own format where it quantises (a per-layer format or the run's recipe), else
    // its compute type and, in a recipe run, why it is kept.
    for (const GemmCoverageEntry& gemm : compiled.coverage.gemms) {
        std::string& text = nodes[gemm.layer].precision;
        if (gemm.quantised)
            text = gemm.format + " GEMM";
        else if (compiled.coverage.recipe != GemmRecipe::None)
            text += ", " + keptReasonText(gemm.kept);
    }
    // Each node's layer carries the node's name (OnnxCompiler::addLayer).
    for (const Layer* layer : layersAtAnyDepth(*compiled.graph))
        if (layer->runsGemms())
            if (const auto found = nodes.find(layer->name()); found != nodes.end())
                found->second.alignment = gemmLayerAlignment(*layer);
    return nodes;
}

std::int64_t nodeParameterCount(const OnnxGraph& graph, const OnnxNode& node)
{
    std::int64_t count = 0;
    for (const std::string& input : node.inputs)
        if (const OnnxTensor* parameter = graph.parameter(input))
            count += parameter->elementCount();
    return count;
}

ModelFileDescription describeOnnxModel(const RunConfig& config)
{
    ImportOptions options;
    options.sampleShape = config.model.input;
    const OnnxGraph onnx = importOnnx(config.model.onnx, options);
    ModelFileDescription rows;
    rows.path = onnx.path;
    rows.parameters = onnx.parameterElementCount();
    rows.flopsPerSample = onnx.flopsPerSample();
    std::map<std::string, NodePrecision> precisions;
    try {
        precisions = nodePrecisions(
            onnx, PrecisionPolicy(config.precision, config.recipe, config.update, config.model.precisionOverrides));
    } catch (const ConfigError& e) {
        rows.problem = e.what();
    }
    for (const OnnxNode& node : onnx.nodes) {
        ModelFileNode row;
        row.name = node.name;
        row.opType = node.domain.empty() ? node.opType : node.domain + "." + node.opType;
        const OnnxValue* output = node.outputs.empty() ? nullptr : onnx.value(node.outputs.front());
        // Per sample: without the batch. (One expression: assigning "?" first and then the
        // shape trips GCC 12's -Wrestrict false positive on the inlined string copy.)
        row.outputShape =
            !output || !output->shapeKnown
                ? std::string("?")
                : shapeText(output->shape.size() > 1
                                ? std::vector<std::int64_t>(output->shape.begin() + 1, output->shape.end())
                                : output->shape);
        row.parameters = nodeParameterCount(onnx, node);
        row.flopsPerSample = node.flopsPerSample;
        row.supported = node.supported && node.domain.empty() && findNodeCompiler(node.opType) != nullptr;
        if (const auto found = precisions.find(node.name); found != precisions.end()) {
            row.precision = found->second.precision;
            const std::optional<LayerAlignment>& alignment = found->second.alignment;
            if (alignment && alignment->verdict == AlignmentVerdict::Misaligned)
                row.alignment = alignment->rule.format + ": " + alignment->reason();
        }
        rows.nodes.push_back(std::move(row));
    }
    return rows;
}

} // namespace mantissa::onnx_import
