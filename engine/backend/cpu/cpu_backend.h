#pragma once
// The CPU backend: oneDNN for matrix products and convolutions (natively in bf16 where the
// CPU has bf16 dot products, cpu_kernel_plan.h), F16C for conversions, OpenMP for the
// remaining loops. Its emulated 16-bit path is the oracle every other backend
// and the native kernels are tested against.
// Its member functions are defined across one file per op family in this folder.
#include "engine/backend/backend.h"
#include "engine/backend/cpu/block_scaled_bf16_kernel.h"
#include "engine/backend/cpu/cpu_kernel_plan.h"
#include "engine/backend/cpu_options.h"

#include <atomic>
#include <memory>
#include <vector>

namespace mantissa {

namespace cpu {
class OneDnnRuntime;
class OneDnnMatmul;
class OneDnnConv;
struct KeptConvInput;
class OneDnnGelu;
class OneDnnSoftmax;
} // namespace cpu

class CpuBackend final : public Backend {
public:
    explicit CpuBackend(const CpuOptions& options);
    ~CpuBackend() override;

    std::string name() const override;
    std::string kernelPaths() const override;
    const cpu::CpuKernelPlan& kernelPlan() const { return m_plan; }
    // The oneDNN runtime its kernels run on (tests: OneDnnRuntime::refuseForTesting).
    cpu::OneDnnRuntime& oneDnnRuntime() { return *m_onednn; }
    Device device() const override { return {DeviceKind::Cpu, 0}; }
    bool supports(Op op, DType dtype) const override;
    int threads() const { return m_threads; }

    Tensor empty(const Shape& shape, DType dtype) override;
    void fill(Tensor& t, float value) override;
    void upload(const float* host, Tensor& dst) override;
    void download(const Tensor& src, float* host) override;
    void cast(const Tensor& src, Tensor& dst) override;
    // 16-bit operands the plan has no native kernel for are widened to fp32 (gemm.cpp).
    DType gemmReadType(DType type) const override
    {
        const bool emulated = (type == DType::F16 && !m_plan.nativeFp16) || (type == DType::BF16 && !m_plan.nativeBf16);
        return emulated ? DType::F32 : type;
    }
    std::size_t peakBytes() const override { return m_peakBytes.load(); }
    void resetPeakBytes() override { m_peakBytes = m_liveBytes.load(); }

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
    void conv2dBackward(const Tensor& x, const Tensor& dy, const Tensor& w, Tensor& dw, Tensor* dbias, Tensor& dx,
                        const ConvGeometry& g, OperandScales filterScales = {}, OperandScales dataScales = {},
                        const ConvKeep* kept = nullptr) override;

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
    void clipGradNorm(std::span<Tensor* const> fp32Grads, StepScalars& scalars, float maxNorm,
                      bool fusedNorm = false) override;
    bool unscalesInOptimizer() const override { return true; }
    void sgdStep(std::span<const OptimizerSlot> slots, const SgdSettings& s, const StepScalars& scalars) override;
    void adamStep(std::span<const OptimizerSlot> slots, const AdamSettings& s, const StepScalars& scalars) override;
    void updateLossScale(StepScalars& scalars, const ScaleRule& rule) override;
    void copyIfSkipped(const Tensor& src, Tensor& dst, const StepScalars& scalars) override;

    TensorStats tensorStats(const Tensor& t, DType target, float histogramScale) override;
    // The fast quantiser where it applies, else the arithmetic the device kernels run
    // (quantize_operand.cpp); quantising again costs more than keeping the result.
    QuantizedOperand quantizeOperand(const Tensor& src, const OperandQuantization& q) override;
    std::optional<QuantizedBlocks> quantizeOperandBlocks(const Tensor& src, const OperandQuantization& q,
                                                         std::int64_t scaleCount) override;
    bool keepsQuantizedOperands() const override { return true; }

    // Records the body's calls on a tape (engine/backend/recording_backend.h) and replays them.
    std::unique_ptr<StepGraph> captureGraph(const std::function<void(Backend&)>& body, std::string* why) override;

private:
    // The arithmetic of the step ops (multi_tensor.cpp), with host scalars: step_ops.cpp reads
    // them from StepScalars and writes the results back there.
    // Returns the index of the first non-finite tensor, or -1; *absMax as GradAmax; *squares the
    // sum of the unscaled values' squares in double.
    int unscaleAndFindNonFinite(std::span<const Tensor* const> grads, std::span<Tensor* const> fp32Grads,
                                float invScale, float* absMax, double* squares = nullptr);
    // Accumulated in double.
    double sumOfSquares(std::span<const Tensor* const> tensors);
    void scaleInPlace(std::span<Tensor* const> tensors, float factor);
    // `invScale`: what a slot's scaledGrad is multiplied by as it is read. `step`: the training
    // step stochastic rounding draws by (MasterStore).
    void sgdUpdate(std::span<const OptimizerSlot> slots, const SgdSettings& s, float lr, float invScale,
                   std::uint64_t step);
    // Adam with the bias corrections given (1 - beta^t), however they were computed.
    void adamUpdate(std::span<const OptimizerSlot> slots, const AdamSettings& s, float lr, float correction1,
                    float correction2, float invScale, std::uint64_t step);

    int m_threads;
    // The OpenMP team size before this backend set its own, put back when it goes: a short-lived
    // backend (a model planned on a scratch backend of 1 thread) must not leave the backend that
    // trains with its thread count.
    int m_threadsBefore;
    cpu::CpuKernelPlan m_plan;
    std::unique_ptr<cpu::OneDnnRuntime> m_onednn;
    std::unique_ptr<cpu::OneDnnMatmul> m_matmul;
    // gemmBlockScaled's per-chunk sums and chunk-packed operands, kept between calls.
    std::vector<float> m_blockPartials;
    std::vector<unsigned char> m_packedA, m_packedB;
    cpu::BlockScaledScratch m_blockScaledScratch; // the own kernel's (m_plan.ownBlockScaledKernel)
    bool m_ownBlockScaledKernelUsed = false;
    std::unique_ptr<cpu::OneDnnConv> m_conv;
    std::unique_ptr<cpu::OneDnnGelu> m_gelu;
    std::unique_ptr<cpu::OneDnnSoftmax> m_softmax;
    std::atomic<std::size_t> m_liveBytes{0};
    std::atomic<std::size_t> m_peakBytes{0};
    // Counts `storage` among the live bytes (peakBytes) until it dies: a tensor's, or what a
    // convolution keeps from its forward for its backward (ConvKeep).
    void countLive(Storage& storage);
    // Hands a convolution's kept input (onednn_conv.h) to the layer's ConvKeep, counted live.
    void keepConvInput(ConvKeep* keep, std::shared_ptr<const cpu::KeptConvInput> kept);
};

} // namespace mantissa
