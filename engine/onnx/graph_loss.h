#pragma once
// A model that carries its own loss (an in-graph SoftmaxCrossEntropyLoss, as exports for
// on-device training write): it trains with that loss, which is the engine's classification
// loss (softmax cross-entropy, the mean over the batch, in fp32), on the logits that feed it.
// The graph's data input is the first one; the labels input feeds only the loss.
#include "engine/onnx/onnx_graph.h"

#include <optional>
#include <string>

namespace mantissa::onnx_import {

struct GraphLoss {
    std::string node;   // the loss node's name
    std::string logits; // the value the loss reads: the model's output for training
    std::string labels; // the graph input that holds the class indices
};

// The graph's loss, or nullopt when it has none. Throws OnnxImportError naming the node where
// its settings are not the engine's loss: a reduction other than mean, class weights, an
// ignore_index, logits of other than [batch, classes], labels computed by the graph or read by
// another node, or a node reading the loss.
std::optional<GraphLoss> graphLoss(const OnnxGraph& graph);

// The value a model trains on: the loss's logits, else the graph's first output.
std::string trainingOutput(const OnnxGraph& graph);
// The graph input fed with the data: the first that is not the loss's labels ("" if none).
std::string dataInput(const OnnxGraph& graph);

} // namespace mantissa::onnx_import
