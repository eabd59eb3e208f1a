#include "engine/onnx/onnx_compiler.h"

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

void OnnxCompiler::bind(const OnnxNode& node, std::size_t output, ValueId value)
{
    if (output >= node.outputs.size() || node.outputs[output].empty())
        refuse(node, "it has no output " + std::to_string(output));
    const Shape expected = perSample(node.outputs[output]);
    if (shapeOf(value) != expected)
        refuse(node, "compiles to an output of " + shapeOf(value).toString() + " per sample where ONNX says " +
                         expected.toString());
    m_values[node.outputs[output]] = value;
}

void OnnxCompiler::addLayer(const OnnxNode& node, LayerPtr layer, ValueId input,
                            std::vector<const OnnxTensor*> initializers, std::vector<const OnnxTensor*> buffers)
{
    layer->setName(node.name);
    layer->applyPrecision(m_policy, m_policy.layer());
    m_graph.beginGroup(node.name, layer->computeType());
    Layer* owned = m_graph.own(std::move(layer));
    bind(node, 0, owned->appendTo(m_graph, input));
    if (!initializers.empty() || !buffers.empty())
        m_bindings.push_back({owned, std::move(initializers), std::move(buffers)});
}

ValueId OnnxCompiler::addOp(const OnnxNode& node, GraphOpPtr op, const std::vector<ValueId>& inputs)
{
    m_graph.beginGroup(node.name, op->computeType());
    return m_graph.addNode1(std::move(op), inputs);
}

} // namespace mantissa::onnx_import
