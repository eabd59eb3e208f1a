#include "engine/onnx/compile_onnx.h"

#include "engine/model/layers/activation_layer.h"
#include "engine/model/layers/flatten.h"
#include "engine/model/layers/linear.h"
#include "engine/onnx/import_onnx.h"
#include "engine/onnx/reshape_op.h"
#include "engine/util/check.h"

#include <map>
#include <set>

namespace mantissa::onnx_import {

namespace {

// A layer made for a node, with the initializers its parameters() hold, in that order.
struct ParameterBinding {
    Layer* layer = nullptr;
    std::vector<const OnnxTensor*> initializers;
};

// NVFP4 refuses partial blocks (as for a preset's layers, compile_layer_list.cpp): every width
// its blocks run along must be a multiple of the block.
void checkRecipeFits(const GemmSite& site)
{
    const GemmRecipe recipe = site.layer->gemmRecipe();
    if (recipe != GemmRecipe::Nvfp4)
        return;
    const auto block = static_cast<std::int64_t>(recipeBlockSize(recipe));
    for (const auto& [field, width] : site.layer->blockedWidths())
        if (width % block != 0)
            throw ConfigError("ONNX node " + site.layer->name() + ": " + gemmRecipeName(recipe) +
                              " quantises blocks of " + std::to_string(block) + " along K, but its " + field + " (" +
                              std::to_string(width) + ") is not a multiple of " + std::to_string(block));
}

class OnnxCompiler {
public:
    OnnxCompiler(const OnnxGraph& onnx, const PrecisionPolicy& policy) : m_onnx(onnx), m_policy(policy) {}

    CompiledOnnx compile(Backend& backend);

private:
    [[noreturn]] void refuse(const OnnxNode& node, const std::string& why) const
    {
        throw ConfigError("ONNX node " + node.name + " (" + node.opType + "): " + why);
    }
    // The graph value an activation input names; an initializer there is not compiled yet.
    ValueId activation(const OnnxNode& node, std::size_t input) const;
    // The trainable initializer input `input` names, used by this node only.
    const OnnxTensor& parameter(const OnnxNode& node, std::size_t input);
    // ONNX's shape of `name` without the batch dimension.
    Shape perSample(const std::string& name) const;

    void addLayer(const OnnxNode& node, LayerPtr layer, ValueId input, std::vector<const OnnxTensor*> initializers);
    void compileNode(const OnnxNode& node);
    void compileGemm(const OnnxNode& node);
    void compileReshape(const OnnxNode& node);

    const OnnxGraph& m_onnx;
    const PrecisionPolicy& m_policy;
    std::unique_ptr<Graph> m_graph;
    std::map<std::string, ValueId> m_values;
    std::set<std::string> m_boundInitializers;
    std::vector<ParameterBinding> m_bindings;
};

ValueId OnnxCompiler::activation(const OnnxNode& node, std::size_t input) const
{
    if (input >= node.inputs.size() || node.inputs[input].empty())
        refuse(node, "input " + std::to_string(input) + " is missing");
    const std::string& name = node.inputs[input];
    const auto found = m_values.find(name);
    if (found != m_values.end())
        return found->second;
    if (m_onnx.parameter(name) || m_onnx.constant(name))
        refuse(node, "input '" + name + "' is an initializer where only a computed value compiles so far");
    refuse(node, "input '" + name + "' is not computed by an earlier node");
}

const OnnxTensor& OnnxCompiler::parameter(const OnnxNode& node, std::size_t input)
{
    const std::string& name = node.inputs.at(input);
    const OnnxTensor* tensor = m_onnx.parameter(name);
    if (!tensor)
        refuse(node, "input '" + name + "' must be a trainable initializer to compile as a layer's weight");
    // One Parameter per initializer: an initializer two nodes read (tied weights) would need
    // both layers to write one gradient, which only the token embedding's tying does so far.
    if (!m_boundInitializers.insert(name).second)
        refuse(node, "initializer '" + name + "' is read by more than one node, which does not compile yet");
    return *tensor;
}

Shape OnnxCompiler::perSample(const std::string& name) const
{
    const OnnxValue* value = m_onnx.value(name);
    MANTISSA_ASSERT(value && value->shapeKnown && !value->shape.empty());
    return Shape(std::vector<std::int64_t>(value->shape.begin() + 1, value->shape.end()));
}

void OnnxCompiler::addLayer(const OnnxNode& node, LayerPtr layer, ValueId input,
                            std::vector<const OnnxTensor*> initializers)
{
    layer->setName(node.name);
    layer->applyPrecision(m_policy, m_policy.layer());
    m_graph->beginGroup(node.name, layer->computeType());
    Layer* owned = m_graph->own(std::move(layer));
    const ValueId output = owned->appendTo(*m_graph, input);
    if (node.outputs.empty())
        refuse(node, "it has no output");
    const Shape expected = perSample(node.outputs[0]);
    if (m_graph->values()[output].shape != expected)
        refuse(node, "compiles to an output of " + m_graph->values()[output].shape.toString() +
                         " per sample where ONNX says " + expected.toString());
    m_values[node.outputs[0]] = output;
    if (!initializers.empty())
        m_bindings.push_back({owned, std::move(initializers)});
}

// Y = alpha op(A) op(B) + beta C. With transA = 0, alpha = beta = 1, transB = 1 and B a
// trainable [out, in] initializer, this is exactly Linear's y = x W^T + b: the same [out, in]
// layout (so the parameter holds the initializer's values as they are and its gradient is ONNX's
// dB), the same product and the bias C of [out] (or [1, out]) broadcast over the rows. PyTorch
// exports nn.Linear as exactly this. The other forms are refused until they have ops of their own.
void OnnxCompiler::compileGemm(const OnnxNode& node)
{
    if (node.intAttribute("transA", 0) != 0 || node.intAttribute("transB", 0) != 1)
        refuse(node, "only transA = 0 and transB = 1 (a linear layer's form) compile so far");
    if (node.floatAttribute("alpha", 1.0f) != 1.0f || node.floatAttribute("beta", 1.0f) != 1.0f)
        refuse(node, "only alpha = beta = 1 compile so far");
    const ValueId input = activation(node, 0);
    const Shape inputShape = m_graph->values()[input].shape;
    if (inputShape.rank() != 1)
        refuse(node, "A must be [batch, features], got " + inputShape.toString() + " per sample");
    const OnnxTensor& weight = parameter(node, 1);
    if (weight.shape.size() != 2 || weight.shape[1] != inputShape[0])
        refuse(node, "B must be [out, " + std::to_string(inputShape[0]) + "]");
    const std::int64_t out = weight.shape[0];
    std::vector<const OnnxTensor*> initializers{&weight};
    const bool hasBias = node.inputs.size() > 2 && !node.inputs[2].empty();
    if (hasBias) {
        const OnnxTensor& bias = parameter(node, 2);
        const bool rowVector = bias.shape.size() == 1 || (bias.shape.size() == 2 && bias.shape[0] == 1);
        if (!rowVector || bias.shape.back() != out)
            refuse(node, "only a bias C of [" + std::to_string(out) + "] compiles so far");
        initializers.push_back(&bias);
    }
    addLayer(node, std::make_unique<Linear>(inputShape[0], out, hasBias, "", false), input, std::move(initializers));
}

// The target shape is a constant the import folded, so ONNX's output shape is the whole story;
// only a reshape that keeps the batch as the first dimension keeps each sample's values apart.
void OnnxCompiler::compileReshape(const OnnxNode& node)
{
    const ValueId input = activation(node, 0);
    const OnnxValue* in = m_onnx.value(node.inputs[0]);
    const OnnxValue* out = m_onnx.value(node.outputs.at(0));
    MANTISSA_ASSERT(in && out);
    if (out->shape.empty() || out->shape[0] != in->shape.at(0))
        refuse(node, "only a reshape that keeps the batch as the first dimension compiles");
    const DType type = m_graph->values()[input].dtype;
    m_graph->beginGroup(node.name, type);
    m_values[node.outputs[0]] = m_graph->addNode1(
        std::make_unique<ReshapeOp>(node.name, type, m_graph->values()[input].shape, perSample(node.outputs[0])),
        {input});
}

void OnnxCompiler::compileNode(const OnnxNode& node)
{
    const std::string& op = node.opType;
    if (op == "Identity") {
        m_values[node.outputs.at(0)] = activation(node, 0);
    } else if (op == "Relu" || op == "Tanh" || op == "Sigmoid") {
        const Activation kind = op == "Relu" ? Activation::Relu : op == "Tanh" ? Activation::Tanh : Activation::Sigmoid;
        addLayer(node, std::make_unique<ActivationLayer>(kind), activation(node, 0), {});
    } else if (op == "Flatten") {
        // Axis 1 keeps the batch and joins the rest, which is Flatten's [N, C, H, W] -> [N, CHW].
        if (node.intAttribute("axis", 1) != 1)
            refuse(node, "only axis = 1 compiles so far");
        addLayer(node, std::make_unique<Flatten>(), activation(node, 0), {});
    } else if (op == "Gemm") {
        compileGemm(node);
    } else if (op == "Reshape") {
        compileReshape(node);
    } else {
        refuse(node, "the import accepts it, but it does not compile into the engine yet");
    }
}

CompiledOnnx OnnxCompiler::compile(Backend& backend)
{
    if (m_onnx.inputs.size() != 1 || m_onnx.outputs.size() != 1)
        throw ConfigError("ONNX model " + m_onnx.path + ": only one data input and one output compile so far, it has " +
                          std::to_string(m_onnx.inputs.size()) + " and " + std::to_string(m_onnx.outputs.size()));
    requireSupported(m_onnx);
    m_graph = std::make_unique<Graph>(perSample(m_onnx.inputs[0]));
    m_values[m_onnx.inputs[0]] = m_graph->input();
    for (const OnnxNode& node : m_onnx.nodes)
        compileNode(node);
    const auto output = m_values.find(m_onnx.outputs[0]);
    if (output == m_values.end())
        throw ConfigError("ONNX model " + m_onnx.path + ": its output '" + m_onnx.outputs[0] + "' is not computed");
    m_graph->setOutput(output->second);

    CompiledOnnx compiled;
    const std::vector<GemmSite> sites = gemmSites(*m_graph);
    compiled.coverage = applyRecipeCoverage(m_policy.recipe(), sites,
                                            keepsFirstAndLastLayers(m_policy.recipe(), m_policy.recipeOptions()));
    for (const GemmSite& site : sites)
        checkRecipeFits(site);
    // The file's values replace the layers' initial draw; each parameter takes its
    // initializer's name, and a working copy in another dtype is rounded from the new master.
    const DType masterType = m_policy.layer().master;
    for (const ParameterBinding& binding : m_bindings) {
        binding.layer->createParameters(backend, masterType, 0);
        const std::vector<Parameter*> parameters = binding.layer->parameters();
        MANTISSA_ASSERT(parameters.size() == binding.initializers.size());
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            Parameter& p = *parameters[i];
            const OnnxTensor& initializer = *binding.initializers[i];
            MANTISSA_ASSERT(p.master.numel() == initializer.elementCount());
            p.name = initializer.name;
            backend.upload(initializer.floats.data(), p.master);
            if (p.working.dtype() != p.master.dtype())
                backend.cast(p.master, p.working);
        }
    }
    compiled.output = m_graph->values()[output->second].shape;
    compiled.graph = std::move(m_graph);
    return compiled;
}

} // namespace

CompiledOnnx compileOnnx(const OnnxGraph& onnx, const PrecisionPolicy& policy, Backend& backend)
{
    return OnnxCompiler(onnx, policy).compile(backend);
}

} // namespace mantissa::onnx_import
