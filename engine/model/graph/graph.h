#pragma once
// A model as a directed acyclic graph of ops (graph_op.h) over values with static per-sample
// shapes and dtypes. Nodes are kept in topological order (a node reads only values made before
// it), so forward walks them in order and backward in reverse. A value read by several nodes
// (the fork of a skip connection) sums the gradients they return, in the value's dtype and in
// the order the readers run forward.
//
// Nodes belong to groups: the nodes compiled from one entry of the JSON layer list (a residual
// block's body, projection and addition), or a single node of a graph that was not compiled from
// a list. A group is what the numerics lens and the overflow localisation report (LayerTap sees
// group indices, PassState::layerIndex is the running node's group) and what names a row of the
// editor, so a list compiled into a graph reports as the list did.
#include "engine/model/graph/graph_op.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace mantissa {

using ValueId = std::size_t;

struct GraphValue {
    Shape shape; // per sample
    DType dtype = DType::F32;
    std::vector<std::size_t> consumers; // the nodes that read it, in order
};

struct GraphNode {
    GraphOpPtr op;
    std::vector<ValueId> inputs;
    std::vector<ValueId> outputs;
    std::size_t group = 0;
};

struct GraphGroup {
    std::string name;          // "3.residual"
    DType computeType;         // the dtype its values are measured against
    std::size_t firstNode = 0; // its backward hands the group's input gradient on
    std::size_t lastNode = 0;  // its first output is the group's output
};

// What a forward pass leaves for backward: one context per node.
struct GraphForward {
    Tensor output;
    std::vector<std::unique_ptr<LayerContext>> contexts;
};

class Graph {
public:
    // The graph's one input: the batch of samples, in `dtype`.
    explicit Graph(Shape inputPerSample, DType dtype = DType::F32);
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;

    ValueId input() const { return 0; }
    // A new group, which the nodes added next belong to.
    std::size_t beginGroup(std::string name, DType computeType);
    // Appends `op` reading `inputs`, which must exist already (so the order stays topological);
    // its outputs take the shapes op->outputShapes gives and the op's compute type.
    std::vector<ValueId> addNode(GraphOpPtr op, std::vector<ValueId> inputs);
    ValueId addNode1(GraphOpPtr op, std::vector<ValueId> inputs)
    {
        return addNode(std::move(op), std::move(inputs))[0];
    }
    // Keeps `layer` alive as long as the graph: the layers that LayerOps point into.
    Layer* own(LayerPtr layer);
    // The layers own() kept, in the order they were given.
    std::vector<Layer*> ownedLayers() const;
    void setOutput(ValueId value) { m_output = value; }
    ValueId output() const { return m_output; }

    // x: [N, input...]. Calls pass.tap's afterForward for each group when `taps` (the model's
    // graph; a block running its own graph standalone leaves the taps to its holder).
    GraphForward forward(PassState& pass, const Tensor& x, bool taps = true) const;
    // dOutput: the output's gradient. Runs backward on every node that has parameters or reads
    // a value that needs a gradient; returns the input's gradient when `inputGradient`, else an
    // undefined tensor (the data's gradient is not computed).
    Tensor backward(PassState& pass, const Tensor& dOutput, GraphForward& forward, bool inputGradient,
                    bool taps = true) const;

    const std::vector<GraphNode>& nodes() const { return m_nodes; }
    const std::vector<GraphValue>& values() const { return m_values; }
    const std::vector<GraphGroup>& groups() const { return m_groups; }
    // The parameters of group `group`'s nodes, in the order backward writes them.
    std::vector<Parameter*> groupParameters(std::size_t group) const;
    // Every node's parameters in the order backward writes them (last node first).
    std::vector<Parameter*> parametersInBackwardOrder() const;
    std::vector<std::pair<std::string, Tensor*>> buffers() const;

private:
    std::vector<GraphValue> m_values;
    std::vector<GraphNode> m_nodes;
    // Per node: whether it has parameters, read at the first backward (parameters are created
    // after the graph is built, and never change after).
    mutable std::vector<char> m_hasParameters;
    std::vector<GraphGroup> m_groups;
    std::vector<LayerPtr> m_owned;
    ValueId m_output = 0;
};

} // namespace mantissa
