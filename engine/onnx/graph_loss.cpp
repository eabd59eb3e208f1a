#include "engine/onnx/graph_loss.h"

#include "engine/onnx/onnx_import_error.h"

#include <algorithm>

namespace mantissa::onnx_import {

std::optional<GraphLoss> graphLoss(const OnnxGraph& graph)
{
    if (!graph.lossNode)
        return std::nullopt;
    const OnnxNode& node = graph.nodes.at(*graph.lossNode);
    const std::string where = graph.path + ": its loss, node '" + node.name + "' (SoftmaxCrossEntropyLoss), ";
    const std::string reduction = node.stringAttribute("reduction", "mean");
    if (reduction != "mean")
        throw OnnxImportError(where + "sums with reduction '" + reduction +
                              "'; only 'mean', the engine's loss, trains (export the logits instead)");
    if (node.attribute("ignore_index"))
        throw OnnxImportError(where + "has an ignore_index, which the engine's loss does not take");
    if (node.inputs.size() > 2 && !node.inputs[2].empty())
        throw OnnxImportError(where + "weighs the classes, which the engine's loss does not");
    if (node.inputs.size() < 2)
        throw OnnxImportError(where + "needs its logits and labels inputs");
    GraphLoss loss{node.name, node.inputs[0], node.inputs[1]};
    const OnnxValue* logits = graph.value(loss.logits);
    if (!logits || logits->kind != ValueKind::Activation || !logits->shapeKnown || logits->shape.size() != 2)
        throw OnnxImportError(where + "reads logits of " +
                              (logits && logits->shapeKnown ? "rank " + std::to_string(logits->shape.size())
                                                            : std::string("unknown shape")) +
                              "; only [batch, classes] computed by the graph trains");
    if (std::find(graph.inputs.begin(), graph.inputs.end(), loss.labels) == graph.inputs.end())
        throw OnnxImportError(where + "reads labels '" + loss.labels + "' that are not a graph input");
    for (const OnnxNode& other : graph.nodes) {
        if (&other == &node)
            continue;
        const bool readsLabels = std::find(other.inputs.begin(), other.inputs.end(), loss.labels) != other.inputs.end();
        const bool readsLoss = std::any_of(node.outputs.begin(), node.outputs.end(), [&](const std::string& out) {
            return std::find(other.inputs.begin(), other.inputs.end(), out) != other.inputs.end();
        });
        if (readsLabels || readsLoss)
            throw OnnxImportError(graph.path + ": node '" + other.name + "' reads " +
                                  (readsLabels ? "the labels" : "the loss") + " of node '" + node.name +
                                  "'; a model trains when only its loss does");
    }
    return loss;
}

std::string trainingOutput(const OnnxGraph& graph)
{
    if (const std::optional<GraphLoss> loss = graphLoss(graph))
        return loss->logits;
    return graph.outputs.empty() ? std::string() : graph.outputs.front();
}

std::string dataInput(const OnnxGraph& graph)
{
    const std::optional<GraphLoss> loss = graphLoss(graph);
    for (const std::string& input : graph.inputs)
        if (!loss || input != loss->labels)
            return input;
    return {};
}

} // namespace mantissa::onnx_import
