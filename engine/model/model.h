#pragma once
// A sequential model built from a validated spec, with its precision policy applied
// (engine/precision/precision_policy.h): each layer computes in the dtype the policy gives it
// and the model inserts the casts between layers whose dtypes differ.
#include "engine/config/run_config.h"
#include "engine/model/gemm_coverage.h"
#include "engine/model/layer.h"

#include <memory>
#include <vector>

namespace mantissa {

struct ModelForward {
    Tensor logits;
    std::vector<std::unique_ptr<LayerContext>> contexts; // one per layer, consumed by backward
};

class Model {
public:
    // Validates the spec (ConfigError "layer 5 (linear): ..." on failure), builds the layers,
    // applies `mode` and the per-layer overrides, and creates parameters on `backend`. Under a
    // recipe every GEMM at any depth quantises its inputs, but the first and last GEMMs stay in
    // bf16 when `recipe` says so (gemm_coverage.h), and a GEMM whose widths the recipe's blocks
    // do not divide is a ConfigError naming it.
    Model(const ModelSpec& spec, PrecisionMode mode, Backend& backend, std::uint64_t seed,
          const RecipeOptions& recipe = {});

    // x: [N, input...] in any dtype; returns logits in the last layer's compute type.
    ModelForward forward(PassState& pass, const Tensor& x);
    // dlogits in the logits' dtype; writes every parameter's grad.
    void backward(PassState& pass, const Tensor& dlogits, ModelForward& forward);

    // Parameters in the order backward produces their gradients (last layer first): the
    // order in which the first non-finite gradient is searched for.
    const std::vector<Parameter*>& parametersInBackwardOrder() const { return m_backwardOrder; }
    std::vector<std::pair<std::string, Tensor*>> buffers();
    std::vector<Layer*> layers();
    const Shape& inputShape() const { return m_input; }
    // Which GEMMs the run's recipe quantises, and why the others are kept.
    const GemmCoverage& gemmCoverage() const { return m_gemmCoverage; }
    std::int64_t classes() const { return m_classes; }
    // Predictions (and labels) per sample: 1 for a classifier, T for a sequence model whose
    // output is [T, classes] (token-level cross-entropy, sequence_loss.h).
    std::int64_t labelsPerSample() const { return m_labelsPerSample; }

private:
    std::vector<LayerPtr> m_layers;
    std::vector<Parameter*> m_backwardOrder;
    // Layers before this one have no parameters, so no gradient is needed below it: backward
    // stops there, and that layer computes no dx (the data's gradient).
    std::size_t m_firstTrainedLayer = 0;
    Shape m_input;
    std::int64_t m_classes;
    std::int64_t m_labelsPerSample = 1;
    GemmCoverage m_gemmCoverage;
};

// What Model would quantise for this spec, mode and recipe, without creating its parameters
// (the precision panel, `show`, reports). Throws ConfigError as Model does.
GemmCoverage plannedGemmCoverage(const ModelSpec& spec, PrecisionMode mode, const RecipeOptions& recipe = {});

} // namespace mantissa
