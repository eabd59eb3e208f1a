#pragma once
// A model: a graph of ops (graph/graph.h) compiled from a validated layer list, or from the model
// file spec.onnx names (model_file.h), with its precision policy applied (engine/precision/precision_policy.h). Each layer of the list is one
// group of graph nodes (a residual or transformer block several, joined by additions); each op
// computes in the dtype the policy gives its layer and the graph converts values between ops
// whose dtypes differ.
#include "engine/config/run_config.h"
#include "engine/model/gemm_coverage.h"
#include "engine/model/graph/graph.h"
#include "engine/model/layer.h"

#include <memory>
#include <vector>

namespace mantissa {

struct ModelForward {
    Tensor logits;
    GraphForward graph; // what backward consumes
};

class Model {
public:
    // With spec.onnx set, compiles that file (model_file.h) instead, its parameters starting from
    // the file's values; spec.input must be its input's per-sample shape and spec.classes its
    // output's last dimension (ConfigError naming both otherwise).
    // Validates the spec (ConfigError "layer 5 (linear): ..." on failure), builds the layers,
    // applies `mode` and the per-layer overrides, compiles the layers into the graph and creates
    // parameters on `backend`. Under a
    // recipe every GEMM at any depth quantises its inputs, but the first and last GEMMs stay in
    // bf16 when `recipe` says so (gemm_coverage.h), and a GEMM whose widths the recipe's blocks
    // do not divide is a ConfigError naming it.
    // `update` decides the masters' dtype (precision.master_weights).
    Model(const ModelSpec& spec, PrecisionMode mode, Backend& backend, std::uint64_t seed,
          const RecipeOptions& recipe = {}, const UpdatePrecision& update = {});

    // x: [N, input...] in any dtype; returns logits in the last layer's compute type.
    ModelForward forward(PassState& pass, const Tensor& x);
    // dlogits in the logits' dtype; writes every parameter's grad.
    void backward(PassState& pass, const Tensor& dlogits, ModelForward& forward);

    // Parameters in the order backward produces their gradients (last layer first): the
    // order in which the first non-finite gradient is searched for.
    const std::vector<Parameter*>& parametersInBackwardOrder() const { return m_backwardOrder; }
    std::vector<std::pair<std::string, Tensor*>> buffers() { return m_graph->buffers(); }
    // The graph; its groups are the layers of the list, in order.
    const Graph& graph() const { return *m_graph; }
    // The layers the list's entries were built as, one per group of the graph (a block holds the
    // layers its nodes run).
    std::vector<Layer*> layers();
    const Shape& inputShape() const { return m_input; }
    // Which GEMMs the run's recipe quantises, and why the others are kept.
    const GemmCoverage& gemmCoverage() const { return m_gemmCoverage; }
    std::int64_t classes() const { return m_classes; }
    // Predictions (and labels) per sample: 1 for a classifier, T for a sequence model whose
    // output is [T, classes] (token-level cross-entropy, sequence_loss.h).
    std::int64_t labelsPerSample() const { return m_labelsPerSample; }

private:
    std::unique_ptr<Graph> m_graph;
    std::vector<Parameter*> m_backwardOrder;
    Shape m_input;
    std::int64_t m_classes;
    std::int64_t m_labelsPerSample = 1;
    GemmCoverage m_gemmCoverage;
};

// What Model would quantise for this spec, mode and recipe, without creating its parameters
// (the precision panel, `show`, reports). Throws ConfigError as Model does.
GemmCoverage plannedGemmCoverage(const ModelSpec& spec, PrecisionMode mode, const RecipeOptions& recipe = {});

} // namespace mantissa
