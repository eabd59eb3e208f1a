#include "engine/model/graph/graph.h"

#include "engine/util/check.h"

#include <algorithm>

namespace mantissa {

namespace {

// `t` in `type`: `t` itself when it is already.
Tensor converted(Backend& backend, const Tensor& t, DType type)
{
    if (t.dtype() == type)
        return t;
    Tensor out = backend.empty(t.shape(), type);
    backend.cast(t, out);
    return out;
}

Shape perSample(const Shape& batched)
{
    return Shape(std::vector<std::int64_t>(batched.dims().begin() + 1, batched.dims().end()));
}

} // namespace

Graph::Graph(Shape inputPerSample, DType dtype) { m_values.push_back({std::move(inputPerSample), dtype, {}}); }

std::size_t Graph::beginGroup(std::string name, DType computeType)
{
    m_groups.push_back({std::move(name), computeType, m_nodes.size(), m_nodes.size()});
    return m_groups.size() - 1;
}

std::vector<ValueId> Graph::addNode(GraphOpPtr op, std::vector<ValueId> inputs)
{
    MANTISSA_ASSERT(!m_groups.empty() && "a node belongs to a group: call beginGroup first");
    std::vector<Shape> inputShapes;
    for (ValueId v : inputs) {
        MANTISSA_ASSERT(v < m_values.size() && "a node reads values made before it");
        inputShapes.push_back(batchedShape(1, m_values[v].shape));
        m_values[v].consumers.push_back(m_nodes.size());
    }
    GraphNode node;
    node.inputs = std::move(inputs);
    node.group = m_groups.size() - 1;
    const std::vector<Shape> outputShapes = op->outputShapes(inputShapes);
    for (std::size_t o = 0; o < outputShapes.size(); ++o) {
        node.outputs.push_back(m_values.size());
        m_values.push_back({perSample(outputShapes[o]), op->outputType(o), {}});
    }
    node.op = std::move(op);
    m_groups.back().lastNode = m_nodes.size();
    m_nodes.push_back(std::move(node));
    m_output = m_nodes.back().outputs.front();
    return m_nodes.back().outputs;
}

Layer* Graph::own(LayerPtr layer)
{
    m_owned.push_back(std::move(layer));
    return m_owned.back().get();
}

std::vector<Layer*> Graph::ownedLayers() const
{
    std::vector<Layer*> all;
    for (const LayerPtr& layer : m_owned)
        all.push_back(layer.get());
    return all;
}

GraphForward Graph::forward(PassState& pass, const Tensor& x, bool taps) const
{
    GraphForward result;
    result.contexts.resize(m_nodes.size());
    std::vector<Tensor> values(m_values.size());
    // How many nodes have yet to read each value: a value is let go after its last reader, so a
    // chain of layers holds no more activations than its contexts keep.
    std::vector<std::size_t> readersLeft(m_values.size());
    for (std::size_t v = 0; v < m_values.size(); ++v)
        readersLeft[v] = m_values[v].consumers.size();
    values[input()] = x;
    for (std::size_t k = 0; k < m_nodes.size(); ++k) {
        const GraphNode& node = m_nodes[k];
        std::vector<Tensor> inputs;
        inputs.reserve(node.inputs.size());
        for (std::size_t i = 0; i < node.inputs.size(); ++i) {
            const ValueId v = node.inputs[i];
            const std::optional<DType> type = node.op->inputType(i);
            inputs.push_back(type ? converted(pass.backend, values[v], *type) : values[v]);
            if (--readersLeft[v] == 0 && v != m_output)
                values[v] = Tensor();
        }
        if (taps)
            pass.layerIndex = node.group;
        OpForward out = node.op->forward(pass, inputs);
        MANTISSA_ASSERT(out.outputs.size() == node.outputs.size());
        for (std::size_t o = 0; o < out.outputs.size(); ++o)
            values[node.outputs[o]] = std::move(out.outputs[o]);
        result.contexts[k] = std::move(out.context);
        if (taps && pass.nodeTap)
            pass.nodeTap->afterNodeForward(k, values[node.outputs.front()]);
        if (taps && pass.tap && m_groups[node.group].lastNode == k)
            pass.tap->afterForward(node.group, values[node.outputs.front()]);
    }
    result.output = values[m_output];
    return result;
}

Tensor Graph::backward(PassState& pass, const Tensor& dOutput, GraphForward& forward, bool inputGradient,
                       bool taps) const
{
    if (m_hasParameters.size() != m_nodes.size()) {
        m_hasParameters.clear();
        for (const GraphNode& node : m_nodes)
            m_hasParameters.push_back(node.op->parameters().empty() ? 0 : 1);
    }
    // A value needs a gradient when a parameter lies upstream of it (or it is the input and the
    // caller asks for its gradient); a node runs backward when it has parameters or one of its
    // inputs needs a gradient. Nothing before the first weights runs (mlp's first linear layer
    // spent an eighth of its fp32 step on the data's gradient).
    std::vector<char> needsGradient(m_values.size(), 0);
    std::vector<char> runs(m_nodes.size(), 0);
    needsGradient[input()] = inputGradient ? 1 : 0;
    for (std::size_t k = 0; k < m_nodes.size(); ++k) {
        const GraphNode& node = m_nodes[k];
        runs[k] = m_hasParameters[k];
        for (ValueId v : node.inputs)
            runs[k] = runs[k] || needsGradient[v];
        for (ValueId v : node.outputs)
            needsGradient[v] = runs[k];
    }

    // Each value's gradient as its readers give it, in the order they give it (the last reader
    // first). A value with several readers takes their sum in its own dtype, formed when it is
    // read, in the order the readers run forward ((g0 + g1) + g2 ...): a layer that forks a value
    // inside itself (attention's Q, K and V projections) sums its branches in that order, so a
    // graph of the same ops gives its bits.
    struct Share {
        std::size_t reader, input;
        Tensor gradient;
    };
    std::vector<std::vector<Share>> shares(m_values.size());
    const auto gradientOf = [&](ValueId v) {
        std::vector<Share>& given = shares[v];
        if (given.empty())
            return Tensor();
        std::sort(given.begin(), given.end(), [](const Share& a, const Share& b) {
            return a.reader != b.reader ? a.reader < b.reader : a.input < b.input;
        });
        Tensor sum = given.front().gradient;
        for (std::size_t k = 1; k < given.size(); ++k) {
            Tensor total = pass.backend.empty(sum.shape(), m_values[v].dtype);
            pass.backend.add(sum, given[k].gradient, total);
            sum = total;
        }
        given.clear();
        return sum;
    };
    shares[m_output].push_back({m_nodes.size(), 0, dOutput});
    const bool inputGradNeeded = pass.inputGradNeeded;
    for (std::size_t k = m_nodes.size(); k-- > 0;) {
        const GraphNode& node = m_nodes[k];
        const bool tapsHere = taps && pass.tap && m_groups[node.group].firstNode == k;
        if (!runs[k]) {
            forward.contexts[k].reset();
            if (tapsHere)
                pass.tap->afterBackward(node.group, Tensor());
            continue;
        }
        std::vector<Tensor> outputGradients;
        for (std::size_t o = 0; o < node.outputs.size(); ++o) {
            const Tensor g = gradientOf(node.outputs[o]);
            outputGradients.push_back(g.defined() ? converted(pass.backend, g, node.op->outputGradientType(o)) : g);
        }
        std::vector<bool> needed;
        for (ValueId v : node.inputs)
            needed.push_back(needsGradient[v] != 0);
        if (taps)
            pass.layerIndex = node.group;
        std::vector<Tensor> inputGradients =
            node.op->backward(pass, outputGradients, forward.contexts[k].get(), needed);
        forward.contexts[k].reset(); // free saved activations as early as possible
        MANTISSA_ASSERT(inputGradients.size() == node.inputs.size());
        for (std::size_t i = 0; i < node.inputs.size(); ++i)
            if (needed[i] && inputGradients[i].defined())
                shares[node.inputs[i]].push_back({k, i, inputGradients[i]});
        if (taps && pass.nodeTap)
            pass.nodeTap->afterNodeBackward(k, inputGradients.empty() ? Tensor() : inputGradients.front());
        if (tapsHere)
            pass.tap->afterBackward(node.group, inputGradients.empty() ? Tensor() : inputGradients.front());
    }
    pass.inputGradNeeded = inputGradNeeded;
    return inputGradient ? gradientOf(input()) : Tensor();
}

std::vector<Parameter*> Graph::groupParameters(std::size_t group) const
{
    std::vector<Parameter*> all;
    for (std::size_t k = m_nodes.size(); k-- > 0;)
        if (m_nodes[k].group == group)
            for (Parameter* p : m_nodes[k].op->parameters())
                all.push_back(p);
    return all;
}

std::vector<Parameter*> Graph::parametersInBackwardOrder() const
{
    std::vector<Parameter*> all;
    for (std::size_t k = m_nodes.size(); k-- > 0;)
        for (Parameter* p : m_nodes[k].op->parameters())
            all.push_back(p);
    return all;
}

std::vector<std::pair<std::string, Tensor*>> Graph::buffers() const
{
    std::vector<std::pair<std::string, Tensor*>> all;
    for (const GraphNode& node : m_nodes)
        for (auto& b : node.op->buffers())
            all.push_back(b);
    return all;
}

} // namespace mantissa
