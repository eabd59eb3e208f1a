#pragma once
// A tape recorder in front of a backend: every op is stored with its arguments as they were
// (tensors by handle, scalars by value) instead of running, and replay() runs the tape on
// the target. That is what a CUDA graph does with kernel launches, so the CPU backend uses
// it for Backend::captureGraph: a training step that bakes in a value which should change
// from step to step, or reads a result back to the host, fails the same way on the CPU as
// it would on a GPU, and CPU tests catch it.
//
// Allocation runs at once (the tensor exists from the capture on and is reused by every
// replay, like a CUDA graph's memory nodes). Calls whose result the host reads or that read
// host memory (upload, download, the host-valued loss, tensorStats) throw UnsupportedError:
// a graph cannot contain them.
#include "engine/backend/backend.h"

#include <functional>
#include <vector>

namespace mantissa {

class RecordingBackend final : public Backend {
public:
    explicit RecordingBackend(Backend& target) : m_target(target) {}

    // Runs every recorded call again, in order.
    void replay() const;
    std::size_t recordedCalls() const { return m_tape.size(); }

    std::string name() const override { return m_target.name(); }
    Device device() const override { return m_target.device(); }
    bool supports(Op op, DType dtype) const override { return m_target.supports(op, dtype); }

    Tensor empty(const Shape& shape, DType dtype) override { return m_target.empty(shape, dtype); }
    void fill(Tensor& t, float value) override;
    void upload(const float* host, Tensor& dst) override;
    void download(const Tensor& src, float* host) override;
    void cast(const Tensor& src, Tensor& dst) override;
    DType gemmReadType(DType type) const override { return m_target.gemmReadType(type); }
    std::size_t peakBytes() const override { return m_target.peakBytes(); }
    void resetPeakBytes() override { m_target.resetPeakBytes(); }

    void gemm(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const Tensor& a,
              const Tensor& b, float beta, Tensor& c) override;
    void gemmRowBias(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, const Tensor& a,
                     const Tensor& b, const Tensor& bias, Tensor& c, OperandScales scales = {},
                     bool relu = false) override;
    void gemmBlockScaled(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, const Tensor& a,
                         const Tensor& b, const Tensor* bias, Tensor& c, const OperandBlockScales& scales) override;
    void rowBiasGrad(const Tensor& dy, Tensor& dbias) override;

    void conv2dForward(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, const ConvGeometry& g,
                       OperandScales scales = {}, ConvKeep* keep = nullptr, bool relu = false) override;
    void conv2dBackwardData(const Tensor& dy, const Tensor& w, Tensor& dx, const ConvGeometry& g,
                            OperandScales scales = {}) override;
    void conv2dBackwardFilter(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor* dbias, const ConvGeometry& g,
                              OperandScales scales = {}, const ConvKeep* kept = nullptr) override;

    void batchNormForward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y, BatchNormState& state,
                          bool training, float momentum, float epsilon) override;
    void batchNormBackward(const Tensor& x, const Tensor& dy, const Tensor& gamma, const BatchNormState& state,
                           Tensor& dx, Tensor& dgamma, Tensor& dbeta) override;

    void activationForward(Activation kind, const Tensor& x, Tensor& y) override;
    void activationBackward(Activation kind, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx) override;
    void pointwiseForward(const PointwiseFunction& f, const Tensor& x, Tensor& y) override;
    void pointwiseBackward(const PointwiseFunction& f, const Tensor& x, const Tensor& dy, Tensor& dx) override;

    void maxPoolForward(const Tensor& x, Tensor& y, Tensor& argmax, const PoolGeometry& g) override;
    void maxPoolBackward(const Tensor& dy, const Tensor& argmax, Tensor& dx, const PoolGeometry& g) override;
    void avgPoolForward(const Tensor& x, Tensor& y, const PoolGeometry& g) override;
    void avgPoolBackward(const Tensor& dy, Tensor& dx, const PoolGeometry& g) override;

    void dropoutForward(const Tensor& x, Tensor& y, Tensor& mask, float p, std::uint64_t seed,
                        std::uint64_t counter) override;
    void dropoutBackward(const Tensor& dy, const Tensor& mask, Tensor& dx) override;

    void add(const Tensor& a, const Tensor& b, Tensor& out) override;

    void rowNormForward(RowNormKind kind, const Tensor& x, const Tensor& gain, const Tensor* bias, Tensor& y,
                        Tensor& mean, Tensor& invStd, float epsilon, DType statistics) override;
    void rowNormBackward(RowNormKind kind, const Tensor& x, const Tensor& dy, const Tensor& gain, const Tensor& mean,
                         const Tensor& invStd, Tensor& dx, Tensor& dgain, Tensor* dbias) override;

    void embeddingForward(const Tensor& ids, const Tensor& table, Tensor& y) override;
    void embeddingBackward(const Tensor& ids, const Tensor& dy, Tensor& dtable, bool accumulate) override;
    void addBroadcast(const Tensor& x, const Tensor& table, Tensor& y, std::int64_t period) override;
    void addBroadcastBackward(const Tensor& dy, Tensor& dtable, std::int64_t period) override;

    void gemmStridedBatched(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                            const Tensor& a, std::int64_t strideA, const Tensor& b, std::int64_t strideB, float beta,
                            Tensor& c, std::int64_t strideC, std::int64_t batch) override;
    void swapAxes(const Tensor& x, Tensor& y, std::int64_t outer, std::int64_t rows, std::int64_t cols,
                  std::int64_t inner) override;
    void softmaxForward(const Tensor& scores, Tensor& probs, std::int64_t queries, std::int64_t keys, bool causal,
                        DType arithmetic) override;
    void softmaxBackward(const Tensor& probs, const Tensor& dprobs, Tensor& dscores, std::int64_t keys) override;

    LossResult softmaxCrossEntropy(const Tensor& logits, const Tensor& labels, float lossScale,
                                   Tensor* dlogits) override;
    LossResult meanSquaredError(const Tensor& predictions, const Tensor& targets, float lossScale,
                                Tensor* dpredictions) override;
    void beginStep(StepScalars& scalars) override;
    void softmaxCrossEntropy(const Tensor& logits, const Tensor& labels, StepScalars& scalars,
                             Tensor& dlogits) override;
    void meanSquaredError(const Tensor& predictions, const Tensor& targets, StepScalars& scalars,
                          Tensor& dpredictions) override;
    void unscaleAndCheckFinite(std::span<const Tensor* const> grads, std::span<Tensor* const> fp32Grads,
                               StepScalars& scalars, bool fusedNorm = false) override;
    bool unscalesInOptimizer() const override { return m_target.unscalesInOptimizer(); }
    void clipGradNorm(std::span<Tensor* const> fp32Grads, StepScalars& scalars, float maxNorm,
                      bool fusedNorm = false) override;
    void sgdStep(std::span<const OptimizerSlot> slots, const SgdSettings& s, const StepScalars& scalars) override;
    void adamStep(std::span<const OptimizerSlot> slots, const AdamSettings& s, const StepScalars& scalars) override;
    void updateLossScale(StepScalars& scalars, const ScaleRule& rule) override;
    void copyIfSkipped(const Tensor& src, Tensor& dst, const StepScalars& scalars) override;

    QuantizedOperand quantizeOperand(const Tensor& src, const OperandQuantization& q) override;
    TensorStats tensorStats(const Tensor& t, DType target, float histogramScale) override;

    // A tape cannot be recorded onto a tape.
    std::unique_ptr<StepGraph> captureGraph(const std::function<void(Backend&)>& body, std::string* why) override;

private:
    void record(std::function<void(Backend&)> call) { m_tape.push_back(std::move(call)); }
    [[noreturn]] static void refuse(const char* what);

    Backend& m_target;
    std::vector<std::function<void(Backend&)>> m_tape;
};

} // namespace mantissa
