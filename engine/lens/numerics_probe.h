#pragma once
// The numerics lens on one step: a LayerTap that measures every layer's output, input
// gradient and parameter gradients as the passes produce them, plus the weights, and
// turns them into a NumericsRecord or, on a skipped step, the overflow's location. A layer
// here is a group of the model's graph (graph.h): a layer of the list, blocks included.
#include "engine/model/model.h"
#include "engine/observe/records.h"

#include <optional>
#include <vector>

namespace mantissa {

struct ProbeSettings {
    DType runTarget = DType::F16; // the run's 16-bit type (fp16 for an fp32 run: "what would fp16 do")
    float lossScale = 1;          // the scale the step's backward used
    bool scaledGradients = false; // gradient histograms of the scaled values
    // Measure what a recipe's quantisation does to every GEMM input (the sampled steps; the
    // overflow localisation does not, so its passes keep the fast quantiser).
    bool gemmInputs = false;
};

class NumericsProbe final : public LayerTap {
public:
    NumericsProbe(Model& model, Backend& backend, const ProbeSettings& settings);

    void afterForward(std::size_t index, const Tensor& output) override;
    void afterBackward(std::size_t index, const Tensor& inputGradient) override;
    // Attention scores and norm statistics, measured as activations of their layer.
    void insideForward(std::size_t index, const std::string& tensor, const Tensor& t) override;
    bool measuresGemmInputs() const override { return m_settings.gemmInputs; }
    // One quantised GEMM input, from GemmInputQuantizer::prepare (nested layers included).
    void gemmInput(const std::string& layer, GemmPass pass, GemmOperand operand, const OperandFormat& format,
                   const QuantStats& stats) override;
    // dlogits, the gradient the backward pass starts from (the last layer's output gradient).
    void measureLossGradient(const Tensor& dlogits);
    // Every parameter's master weights; call before the optimizer updates them.
    void measureWeights();

    // Tensors in the order they were measured (forward, then backward order).
    const std::vector<TensorNumerics>& measured() const { return m_measured; }
    const std::vector<GemmInputNumerics>& gemmInputs() const { return m_gemmInputs; }
    // The step's record: tensors ordered by layer, then kind; GEMM inputs by layer, pass, operand.
    NumericsRecord record(std::int64_t step) const;
    // The first tensor holding a non-finite value: in forward order when the forward pass
    // failed (the loss was non-finite), else in backward order. nullopt when none did.
    std::optional<OverflowLocation> locateOverflow(bool forwardFailed) const;

private:
    DType targetOf(std::size_t layer) const;
    int topLevelIndexOf(const std::string& layer) const;
    void add(std::size_t layer, TensorKind kind, std::string tensor, const Tensor& t, float histogramScale);

    const Graph& m_graph;
    std::vector<GraphGroup> m_layers; // the graph's groups
    Backend& m_backend;
    ProbeSettings m_settings;
    float m_gradientScale; // applied to gradient histograms: 1 / loss scale, or 1 when scaled
    std::vector<TensorNumerics> m_measured;
    std::vector<GemmInputNumerics> m_gemmInputs;
};

// On a sampled step, lets backward write each 16-bit parameter gradient into an fp32
// tensor, so that the probe sees the values before rounding: what fp16 flushes to zero
// is visible only there. release() rounds them into the real gradient tensors, which
// gives the bits backward would have written (every backend op accumulates in fp32 and
// rounds its output once), so sampling does not change training.
class GradientCapture {
public:
    GradientCapture(Backend& backend, const std::vector<Parameter*>& parameters);
    ~GradientCapture() { release(); }
    GradientCapture(const GradientCapture&) = delete;
    GradientCapture& operator=(const GradientCapture&) = delete;
    void release();

private:
    Backend& m_backend;
    std::vector<std::pair<Parameter*, Tensor>> m_swapped; // parameter, its real gradient tensor
};

} // namespace mantissa
