#pragma once
// The state of one ONNX-to-engine compilation (compile_onnx.h), and the helpers every node's
// compiler uses: the graph values ONNX names map to, the initializers bound as parameters, and
// the checks that give a node's refusal its name. A node's compiler (node_compilers.h) reads its
// inputs with activation() or parameter(), adds its ops with addLayer() or addOp(), and names
// its outputs with bind().
#include "engine/model/graph/graph.h"
#include "engine/onnx/batch_layout.h"
#include "engine/onnx/onnx_graph.h"
#include "engine/precision/precision_policy.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mantissa {
class TokenEmbedding;
}

namespace mantissa::onnx_import {

// A layer made for a node, with the initializers its parameters() hold, in that order, and
// those its buffers() start from (a batch norm's running statistics).
struct ParameterBinding {
    Layer* layer = nullptr;
    std::vector<const OnnxTensor*> initializers;
    std::vector<const OnnxTensor*> buffers;
};

// A trainable initializer as a node reads it without copying it: itself, or a view that a
// Transpose, Unsqueeze, Reshape or Gather of all its rows in order made; `dims` is the view's
// ONNX shape. The consumer (a linear layer, an addition) decides whether it can compute with it.
struct ParameterView {
    const OnnxTensor* tensor = nullptr;
    std::vector<std::int64_t> dims;
    bool transposed = false; // a 2-D initializer read as its transpose
    // Repeated over the batch: Expand of a [1, ...] initializer to [batch, ...] (a class token),
    // which only an op that reads it per sample (Concat) takes.
    bool overBatch = false;
};

class OnnxCompiler {
public:
    OnnxCompiler(const OnnxGraph& onnx, const PrecisionPolicy& policy, Graph& graph);

    const OnnxGraph& onnx() const { return m_onnx; }
    const PrecisionPolicy& policy() const { return m_policy; }
    Graph& graph() { return m_graph; }

    [[noreturn]] void refuse(const OnnxNode& node, const std::string& why) const;
    // The graph value an activation input names; refuses an initializer or a name no earlier
    // node computed.
    ValueId activation(const OnnxNode& node, std::size_t input) const;
    // Whether input `input` names a value an earlier node computed (not an initializer).
    bool isActivation(const OnnxNode& node, std::size_t input) const;
    // The trainable initializer input `input` names, used by this node only.
    const OnnxTensor& parameter(const OnnxNode& node, std::size_t input);
    // The initializer (or a view of it) that input `input` names, without claiming it; none for
    // a computed value or a constant.
    std::optional<ParameterView> parameterView(const OnnxNode& node, std::size_t input) const;
    void bindParameterView(const std::string& name, ParameterView view) { m_views[name] = std::move(view); }
    // Marks `tensor` as read by one op of the graph; refuses a second reader (see parameter()).
    void claim(const OnnxNode& node, const OnnxTensor& tensor);
    // A token embedding whose table a later MatMul may read transposed (a tied output head).
    void setEmbedding(const std::string& initializer, TokenEmbedding* layer) { m_embeddings[initializer] = layer; }
    TokenEmbedding* embeddingOf(const std::string& initializer) const;
    // The constant input `input` names, if it is one.
    const OnnxTensor* constant(const OnnxNode& node, std::size_t input) const;
    // ONNX's shape of `name` without the batch dimension.
    Shape perSample(const std::string& name) const;
    // ONNX's full shape of `name` (with the import's batch) and where its batch lies.
    const std::vector<std::int64_t>& dims(const std::string& name) const;
    BatchLayout layout(const std::string& name) const;
    std::int64_t batch() const { return m_onnx.batchSize; }
    // The graph value's per-sample shape and dtype.
    const Shape& shapeOf(ValueId value) const { return m_graph.values()[value].shape; }
    DType dtypeOf(ValueId value) const { return m_graph.values()[value].dtype; }

    // A layer for `node` on `input`, in a group named by the node, with the policy's dtypes; its
    // output is checked against ONNX's shape and bound to the node's first output. The
    // initializers are loaded into the layer's parameters() in that order, and `buffers` into
    // its buffers() (a batch norm's running statistics).
    void addLayer(const OnnxNode& node, LayerPtr layer, ValueId input, std::vector<const OnnxTensor*> initializers,
                  const BatchLayout& layout = {}, std::vector<const OnnxTensor*> buffers = {});
    // addLayer without naming the output: the value it computes, for an op of the same group to
    // finish (appendToGroup) before bind(). With `inputView`, the layer reads `input` viewed in
    // that per-sample shape (the same values in the same order), the view an op of its group.
    ValueId appendLayer(const OnnxNode& node, LayerPtr layer, ValueId input,
                        std::vector<const OnnxTensor*> initializers, std::vector<const OnnxTensor*> buffers = {},
                        const std::optional<Shape>& inputView = std::nullopt);
    // A graph op in the group the last addOp or appendLayer began (the node's own), reading
    // `inputs`; returns its first output.
    ValueId appendToGroup(GraphOpPtr op, const std::vector<ValueId>& inputs);
    // A layer that holds parameters, kept by the graph and bound to `initializers`, without a node
    // of its own (the holder of an elementwise op's parameter operand).
    Layer* ownParameters(const OnnxNode& node, LayerPtr layer, std::vector<const OnnxTensor*> initializers);
    // A graph op for `node` on `inputs`, in a group named by the node; returns its first output.
    ValueId addOp(const OnnxNode& node, GraphOpPtr op, const std::vector<ValueId>& inputs);
    // Names ONNX's output `output` of `node` as `value`, whose batch lies at `layout`, checking
    // its per-sample shape. A batch that moves needs an import batch of at least 2 to be found
    // in ONNX's shapes.
    void bind(const OnnxNode& node, std::size_t output, ValueId value, const BatchLayout& layout = {});

    const std::vector<ParameterBinding>& bindings() const { return m_bindings; }
    // A 2-D initializer the layer holds as its transpose (a [K, N] MatMul weight, which a linear
    // layer keeps as [N, K]): loaded transposed, and exported back in the file's layout.
    void holdTransposed(const OnnxTensor& tensor) { m_transposed.insert(tensor.name); }
    const std::set<std::string>& transposedInitializers() const { return m_transposed; }
    // Attention's probabilities P (an attention softmax's output): the product that reads P as
    // its left operand writes dP in attention's dtype for it (attention_scores.h).
    void markAttentionProbabilities(ValueId value) { m_probabilities.insert(value); }
    bool isAttentionProbabilities(ValueId value) const { return m_probabilities.contains(value); }
    // The graph value ONNX's `name` maps to, if any node (or the input) computed it.
    const ValueId* find(const std::string& name) const;
    void bindInput(const std::string& name, ValueId value) { m_values[name] = value; }

private:
    const OnnxGraph& m_onnx;
    const PrecisionPolicy& m_policy;
    Graph& m_graph;
    std::map<std::string, ValueId> m_values;
    std::map<std::string, BatchLayout> m_layouts;
    std::map<std::string, ParameterView> m_views;
    std::map<std::string, TokenEmbedding*> m_embeddings;
    std::set<std::string> m_boundInitializers;
    std::set<std::string> m_transposed;
    std::set<ValueId> m_probabilities;
    std::vector<ParameterBinding> m_bindings;
};

} // namespace mantissa::onnx_import
