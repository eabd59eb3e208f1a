#include "engine/onnx/compile_onnx.h"

#include "engine/model/layer_formats.h"
#include "engine/model/layers/activation_layer.h"
#include "engine/onnx/attention_pattern.h"
#include "engine/onnx/gelu_pattern.h"
#include "engine/onnx/graph_loss.h"
#include "engine/onnx/import_onnx.h"
#include "engine/onnx/node_compilers.h"
#include "engine/util/check.h"

namespace mantissa::onnx_import {

namespace {

// NVFP4 refuses partial blocks (as for a preset's layers, compile_layer_list.cpp): every width
// its blocks run along must be a multiple of the block.
void checkRecipeFits(const GemmSite& site)
{
    if (const std::optional<std::string> misfit = nvfp4Misfit(*site.layer))
        throw ConfigError("ONNX node " + site.layer->name() + " runs in " + site.layer->formatLabel() +
                          ", whose nvfp4 blocks of 16 run along K, but " + *misfit +
                          "; keep the node in bf16 (an entry in model.precision_overrides) or use another format");
}

void compileNode(OnnxCompiler& compiler, const OnnxNode& node)
{
    const NodeCompiler compile = findNodeCompiler(node.opType);
    if (!compile)
        compiler.refuse(node, "the import accepts it, but it does not compile into the engine yet");
    compile(compiler, node);
}

// The last node of a GELU subgraph (gelu_pattern.h) as one GELU of x, named after that node.
void compileGelu(OnnxCompiler& compiler, const OnnxNode& last, const std::string& x)
{
    OnnxNode gelu = last;
    gelu.inputs = {x};
    compiler.addLayer(gelu, std::make_unique<ActivationLayer>(Activation::Gelu), compiler.activation(gelu, 0), {},
                      compiler.layout(x));
}

// The file's values replace the layers' initial draw; each parameter takes its initializer's
// name, and a working copy in another dtype is rounded from the new master. Buffers (running
// statistics) start from their initializers too.
void loadParameters(const std::vector<ParameterBinding>& bindings, const std::set<std::string>& transposed,
                    DType masterType, Backend& backend)
{
    for (const ParameterBinding& binding : bindings) {
        binding.layer->createParameters(backend, masterType, 0);
        const std::vector<Parameter*> parameters = binding.layer->parameters();
        MANTISSA_ASSERT(parameters.size() == binding.initializers.size());
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            Parameter& p = *parameters[i];
            const OnnxTensor& initializer = *binding.initializers[i];
            MANTISSA_ASSERT(p.master.numel() == initializer.elementCount());
            p.name = initializer.name;
            if (transposed.contains(initializer.name)) {
                const std::vector<float> held = transpose2d(initializer.floats, initializer.shape);
                backend.upload(held.data(), p.master);
            } else {
                backend.upload(initializer.floats.data(), p.master);
            }
            if (p.working.dtype() != p.master.dtype())
                backend.cast(p.master, p.working);
        }
        const std::vector<std::pair<std::string, Tensor*>> buffers = binding.layer->buffers();
        MANTISSA_ASSERT(binding.buffers.empty() || buffers.size() == binding.buffers.size());
        for (std::size_t i = 0; i < binding.buffers.size(); ++i) {
            MANTISSA_ASSERT(buffers[i].second->numel() == binding.buffers[i]->elementCount() &&
                            buffers[i].second->dtype() == DType::F32);
            backend.upload(binding.buffers[i]->floats.data(), *buffers[i].second);
        }
    }
}

Shape perSampleShape(const OnnxGraph& onnx, const std::string& name)
{
    const OnnxValue* value = onnx.value(name);
    MANTISSA_ASSERT(value && value->shapeKnown && !value->shape.empty());
    return Shape(std::vector<std::int64_t>(value->shape.begin() + 1, value->shape.end()));
}

} // namespace

CompiledOnnx compileOnnx(const OnnxGraph& onnx, const PrecisionPolicy& policy, Backend& backend)
{
    // A graph with its own loss (graph_loss.h) trains on the logits the loss reads; its labels
    // input is the data's labels, so it is not a data input here.
    const std::optional<GraphLoss> loss = graphLoss(onnx);
    const std::size_t dataInputs = onnx.inputs.size() - (loss ? 1 : 0);
    if (dataInputs != 1 || (!loss && onnx.outputs.size() != 1))
        throw ConfigError("ONNX model " + onnx.path + ": only one data input and one output compile so far, it has " +
                          std::to_string(dataInputs) + " and " + std::to_string(onnx.outputs.size()));
    requireSupported(onnx);
    const std::string input = dataInput(onnx);
    const std::string outputName = trainingOutput(onnx);
    auto graph = std::make_unique<Graph>(perSampleShape(onnx, input));
    OnnxCompiler compiler(onnx, policy, *graph);
    compiler.bindInput(input, graph->input());
    // Subgraphs that run as fewer ops of the engine's (gelu_pattern.h, attention_pattern.h).
    const GeluPatterns gelus = findGeluPatterns(onnx);
    const AttentionPatterns attention = findAttentionPatterns(onnx);
    for (std::size_t i = 0; i < onnx.nodes.size(); ++i) {
        const OnnxNode& node = onnx.nodes[i];
        if ((loss && i == *onnx.lossNode) || gelus.absorbed.contains(i) || attention.absorbed.contains(i))
            continue;
        if (const auto gelu = gelus.inputOf.find(i); gelu != gelus.inputOf.end())
            compileGelu(compiler, node, gelu->second);
        else if (const auto scaled = attention.alphaOf.find(i); scaled != attention.alphaOf.end())
            compileScoresMatMul(compiler, node, scaled->second);
        else if (const auto softmax = attention.softmaxOf.find(i); softmax != attention.softmaxOf.end())
            compileScoresSoftmax(compiler, node, softmax->second.scores, softmax->second.causal);
        else
            compileNode(compiler, node);
    }
    const ValueId* output = compiler.find(outputName);
    if (!output)
        throw ConfigError("ONNX model " + onnx.path + ": its output '" + outputName + "' is not computed");
    // The graph hands its output on batch-first, as the loss reads it.
    if (!compiler.layout(outputName).batchFirst())
        throw ConfigError("ONNX model " + onnx.path + ": its output '" + outputName + "' holds the batch in axis " +
                          std::to_string(compiler.layout(outputName).axis) +
                          ", not the first; only a batch-first output compiles");
    graph->setOutput(*output);

    CompiledOnnx compiled;
    const std::vector<GemmSite> sites = gemmSites(*graph);
    compiled.coverage =
        applyRecipeCoverage(policy.recipe(), sites, keepsFirstAndLastLayers(policy.recipe(), policy.recipeOptions()));
    for (const GemmSite& site : sites)
        checkRecipeFits(site);
    checkOverridesNameLayers(*graph, policy.overrides());
    loadParameters(compiler.bindings(), compiler.transposedInitializers(), policy.layer().master, backend);
    compiled.transposedInitializers = compiler.transposedInitializers();
    compiled.output = graph->values()[*output].shape;
    compiled.graph = std::move(graph);
    return compiled;
}

} // namespace mantissa::onnx_import
