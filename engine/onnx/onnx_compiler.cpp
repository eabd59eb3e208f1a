#include "engine/onnx/onnx_compiler.h"

#include "engine/onnx/reshape_op.h"
#include "engine/util/check.h"

namespace mantissa::onnx_import {

OnnxCompiler::OnnxCompiler(const OnnxGraph& onnx, const PrecisionPolicy& policy, Graph& graph)
    : m_onnx(onnx), m_policy(policy), m_graph(graph)
{}

void OnnxCompiler::refuse(const OnnxNode& node, const std::string& why) const
{
    throw ConfigError("ONNX node " + node.name + " (" + node.opType + "): " + why);
}

const ValueId* OnnxCompiler::find(const std::string& name) const
{
    const auto found = m_values.find(name);
    return found == m_values.end() ? nullptr : &found->second;
}

bool OnnxCompiler::isActivation(const OnnxNode& node, std::size_t input) const
{
    return input < node.inputs.size() && !node.inputs[input].empty() && find(node.inputs[input]);
}

ValueId OnnxCompiler::activation(const OnnxNode& node, std::size_t input) const
{
    if (input >= node.inputs.size() || node.inputs[input].empty())
        refuse(node, "input " + std::to_string(input) + " is missing");
    const std::string& name = node.inputs[input];
    if (const ValueId* value = find(name))
        return *value;
    if (m_onnx.parameter(name) || m_onnx.constant(name))
        refuse(node, "input '" + name + "' is an initializer where only a computed value compiles so far");
    refuse(node, "input '" + name + "' is not computed by an earlier node");
}

const OnnxTensor& OnnxCompiler::parameter(const OnnxNode& node, std::size_t input)
{
    if (input >= node.inputs.size() || node.inputs[input].empty())
        refuse(node, "input " + std::to_string(input) + " is missing");
    const std::string& name = node.inputs[input];
    const OnnxTensor* tensor = m_onnx.parameter(name);
    if (!tensor)
        refuse(node, "input '" + name + "' must be a trainable initializer to compile as a layer's weight");
    claim(node, *tensor);
    return *tensor;
}

void OnnxCompiler::claim(const OnnxNode& node, const OnnxTensor& tensor)
{
    // One Parameter per initializer: an initializer two nodes read (tied weights) would need
    // both layers to write one gradient, which only the token embedding's tying does so far.
    if (!m_boundInitializers.insert(tensor.name).second)
        refuse(node, "initializer '" + tensor.name + "' is read by more than one node, which does not compile yet");
}

std::optional<ParameterView> OnnxCompiler::parameterView(const OnnxNode& node, std::size_t input) const
{
    if (input >= node.inputs.size() || node.inputs[input].empty())
        return std::nullopt;
    const std::string& name = node.inputs[input];
    if (const auto view = m_views.find(name); view != m_views.end())
        return view->second;
    if (const OnnxTensor* tensor = m_onnx.parameter(name))
        return ParameterView{tensor, tensor->shape, false};
    return std::nullopt;
}

TokenEmbedding* OnnxCompiler::embeddingOf(const std::string& initializer) const
{
    const auto found = m_embeddings.find(initializer);
    return found == m_embeddings.end() ? nullptr : found->second;
}

const OnnxTensor* OnnxCompiler::constant(const OnnxNode& node, std::size_t input) const
{
    if (input >= node.inputs.size() || node.inputs[input].empty())
        return nullptr;
    return m_onnx.constant(node.inputs[input]);
}

const std::vector<std::int64_t>& OnnxCompiler::dims(const std::string& name) const
{
    const OnnxValue* value = m_onnx.value(name);
    MANTISSA_ASSERT(value && value->shapeKnown);
    return value->shape;
}

BatchLayout OnnxCompiler::layout(const std::string& name) const
{
    const auto found = m_layouts.find(name);
    return found == m_layouts.end() ? BatchLayout{} : found->second;
}

Shape OnnxCompiler::perSample(const std::string& name) const
{
    const OnnxValue* value = m_onnx.value(name);
    MANTISSA_ASSERT(value && value->shapeKnown && !value->shape.empty());
    return Shape(std::vector<std::int64_t>(value->shape.begin() + 1, value->shape.end()));
}

void OnnxCompiler::bind(const OnnxNode& node, std::size_t output, ValueId value, const BatchLayout& layout)
{
    if (output >= node.outputs.size() || node.outputs[output].empty())
        refuse(node, "it has no output " + std::to_string(output));
    const std::string& name = node.outputs[output];
    if (!layout.batchFirst() && batch() < 2)
        refuse(node, "the batch moves from the first axis here, which compiles only with a batch of at least 2 "
                     "(where ONNX's shapes show which axis holds it)");
    Shape expected;
    try {
        expected = perSampleShape(dims(name), layout, batch());
    } catch (const ConfigError& e) {
        refuse(node, e.what());
    }
    if (shapeOf(value) != expected)
        refuse(node, "compiles to an output of " + shapeOf(value).toString() + " per sample where ONNX says " +
                         expected.toString());
    m_values[name] = value;
    m_layouts[name] = layout;
}

void OnnxCompiler::addLayer(const OnnxNode& node, LayerPtr layer, ValueId input,
                            std::vector<const OnnxTensor*> initializers, const BatchLayout& layout,
                            std::vector<const OnnxTensor*> buffers)
{
    bind(node, 0, appendLayer(node, std::move(layer), input, std::move(initializers), std::move(buffers)), layout);
}

ValueId OnnxCompiler::appendLayer(const OnnxNode& node, LayerPtr layer, ValueId input,
                                  std::vector<const OnnxTensor*> initializers, std::vector<const OnnxTensor*> buffers,
                                  const std::optional<Shape>& inputView)
{
    layer->setName(node.name);
    layer->applyPrecision(m_policy, m_policy.layerNamed(node.name, m_policy.layer()));
    m_graph.beginGroup(node.name, layer->computeType());
    if (inputView)
        input = m_graph.addNode1(
            std::make_unique<ReshapeOp>(node.name + ".view", dtypeOf(input), shapeOf(input), *inputView), {input});
    Layer* owned = m_graph.own(std::move(layer));
    const ValueId value = owned->appendTo(m_graph, input);
    if (!initializers.empty() || !buffers.empty())
        m_bindings.push_back({owned, std::move(initializers), std::move(buffers)});
    return value;
}

ValueId OnnxCompiler::appendToGroup(GraphOpPtr op, const std::vector<ValueId>& inputs)
{
    return m_graph.addNode1(std::move(op), inputs);
}

Layer* OnnxCompiler::ownParameters(const OnnxNode& node, LayerPtr layer, std::vector<const OnnxTensor*> initializers)
{
    layer->setName(node.name);
    layer->applyPrecision(m_policy, m_policy.layerNamed(node.name, m_policy.layer()));
    Layer* owned = m_graph.own(std::move(layer));
    m_bindings.push_back({owned, std::move(initializers), {}});
    return owned;
}

ValueId OnnxCompiler::addOp(const OnnxNode& node, GraphOpPtr op, const std::vector<ValueId>& inputs)
{
    m_graph.beginGroup(node.name, op->computeType());
    return m_graph.addNode1(std::move(op), inputs);
}

} // namespace mantissa::onnx_import
