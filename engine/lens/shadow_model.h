#pragma once
// The shadow error track (RunConfig::numerics.shadowEvery): on a shadowed step the batch first
// goes through an fp32 copy of the model holding the run's current master weights, forward and
// backward, and every node's output, input gradient and weight gradient is kept on the host;
// then the run's own step runs as always, with a NodeTap that compares each of its tensors
// with the fp32 one as the pass produces it (engine/numerics/shadow_error.h).
//
// Nothing of the run changes: the copy has parameters, buffers and gradients of its own, takes
// no optimizer step, and its batch-norm running statistics are its own (set from the run's
// before each pass, so an imported model that normalises with them sees the run's); its
// dropout masks are the run's, drawn from the same seed, step and layer name.
//
// A node is a graph node (graph.h), not a group: a block's norms, attention, MLP and additions
// each have rows, and so has every node of an imported graph. Casts between dtypes are not
// layers and have none. A layer that runs others inside one node (an attention's query, key
// and value projections) is compared on its output, and each projection on its weight gradient.
#include "engine/model/model.h"
#include "engine/observe/records.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mantissa {

// The fp32 pass's tensors, by node key (shadowNodeKeys) and by parameter name.
struct ShadowReference {
    std::map<std::string, std::vector<float>> outputs, inputGradients, weightGradients;
    std::vector<float> compared; // the run's tensor being compared, downloaded
};

// A key per node of `graph`, empty for a node that has no rows (a cast): its name, with "#2",
// "#3" appended to a name already taken, so that two graphs of one spec key alike whatever
// casts their dtypes put between the nodes.
std::vector<std::string> shadowNodeKeys(const Graph& graph);

class ShadowModel {
public:
    // An fp32 copy of `spec`: per-layer precision overrides and 16-bit softmax or statistics
    // dropped. Throws ConfigError as Model does.
    ShadowModel(const ModelSpec& spec, Backend& backend, std::uint64_t seed);

    // The fp32 pass of step `step` on batch (x, y) with `run`'s weights and buffers (changing
    // none). Its gradients are of the unscaled loss. The tensors stay valid until the next
    // measure(), which reuses their memory (shadowed steps come one at a time).
    ShadowReference& measure(Model& run, const Tensor& x, const Tensor& y, DataTask task, std::uint64_t seed,
                             std::uint64_t step);

private:
    Backend& m_backend;
    Model m_model;
    ShadowReference m_reference;
};

// The run's side of a shadowed step: install as PassState::nodeTap on the step's pass, call
// compareWeightGradients after its backward (before the gradients are unscaled, clipped or
// averaged), then record().
class ShadowComparison final : public NodeTap {
public:
    // `lossScale`: the scale the step's backward runs with, divided out of its gradients.
    // `reference` must outlive the comparison.
    ShadowComparison(const Model& run, Backend& backend, ShadowReference& reference, float lossScale);

    void afterNodeForward(std::size_t node, const Tensor& output) override;
    void afterNodeBackward(std::size_t node, const Tensor& inputGradient) override;
    void compareWeightGradients();
    ShadowRecord record(std::int64_t step) const;

private:
    // Downloads `t` and compares it with `reference` (unscaled by `unscale`); nothing when the
    // reference lacks the tensor.
    void compare(std::size_t node, ShadowTensor kind, const std::string& tensor, const Tensor& t,
                 const std::map<std::string, std::vector<float>>& reference, const std::string& key, double unscale);

    const Graph& m_graph;
    Backend& m_backend;
    ShadowReference& m_reference;
    float m_lossScale;
    std::vector<std::string> m_keys;
    std::vector<std::vector<ShadowError>> m_byNode; // per node: output, input gradient, weight gradients
};

} // namespace mantissa
