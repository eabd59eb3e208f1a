#pragma once
// The CUDA implementation of the backend contract (engine/backend/backend.h): GEMMs through
// cuBLAS on tensor cores (fp16/bf16 inputs, fp32 accumulation; fp32 in true fp32 unless
// TF32 is asked for), convolutions through cuDNN with the algorithm cached per shape, and
// Mantissa's own kernels (kernels.h) for everything else. One stream per backend; calls
// return as soon as their work is queued, except those whose result the host needs
// (download, the host-valued loss, tensorStats). The step on the device
// (step_ops.cpp) keeps every scalar on the GPU, and captureGraph (cuda_graph.cpp) records a
// step as a CUDA graph; what that asks of the rest is said where it is done: persistent
// buffers are allocated here, in the constructor, never while capturing; descriptor arrays
// come from DescriptorCache; cuBLAS gets a workspace of its own; conv_plans refuses an
// algorithm search during a capture, and the calls that wait for the host refuse to run in one.
#include "engine/backend/backend.h"
#include "engine/backend/cuda_options.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <memory>
#include <string>
#include <vector>

namespace mantissa::cuda {

class DeviceMemory;
class ConvPlans;
class DescriptorCache;
class Fp8Matmul;
class Fp8Operands;
class PinnedPool;
class UploadStaging;
struct TensorRef;
struct SlotRef;
struct DeviceTensorStats;

class CudaBackend final : public Backend {
public:
    CudaBackend(int device, const CudaOptions& options);
    ~CudaBackend() override;

    std::string name() const override { return m_name; }
    // The FP8 GEMM's path (fp8_gemm.h): cuBLASLt FP8 or emulated, and how many GEMMs took each.
    std::string kernelPaths() const override;
    Device device() const override { return {DeviceKind::Cuda, m_device}; }
    bool supports(Op op, DType dtype) const override;

    Tensor empty(const Shape& shape, DType dtype) override;
    void fill(Tensor& t, float value) override;
    void upload(const float* host, Tensor& dst) override;
    void download(const Tensor& src, float* host) override;
    void cast(const Tensor& src, Tensor& dst) override;
    std::size_t peakBytes() const override;
    void resetPeakBytes() override;

    void gemm(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const Tensor& a,
              const Tensor& b, float beta, Tensor& c) override;
    void gemmRowBias(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, const Tensor& a,
                     const Tensor& b, const Tensor& bias, Tensor& c, OperandScales scales = {},
                     bool relu = false) override;
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

    // Transformer ops (backend.h): transformer_ops.cpp over row_norm.cu, embedding.cu and
    // attention.cu; gemmStridedBatched in cublas_gemm.cpp.
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
    void sgdStep(std::span<const OptimizerSlot> slots, const SgdSettings& s, const StepScalars& scalars) override;
    void adamStep(std::span<const OptimizerSlot> slots, const AdamSettings& s, const StepScalars& scalars) override;
    void updateLossScale(StepScalars& scalars, const ScaleRule& rule) override;
    void copyIfSkipped(const Tensor& src, Tensor& dst, const StepScalars& scalars) override;
    // A copy into pinned memory marked by an event (host_read.h): only wait() waits.
    std::unique_ptr<HostRead> readAsync(const Tensor& src) override;

    // Measured by a kernel (tensor_stats.cu); only the counts and histogram are copied back.
    // FP8 elements in bf16, every other operand's values in fp32 (an MX value below bf16's
    // range would need a check on the host first).
    QuantizedOperand quantizeOperand(const Tensor& src, const OperandQuantization& q) override;
    TensorStats tensorStats(const Tensor& t, DType target, float histogramScale) override;

    std::unique_ptr<StepGraph> captureGraph(const std::function<void(Backend&)>& body, std::string* why) override;

    cudaStream_t stream() const;
    // Blocks until every queued call has run; throws what the device reported.
    void synchronize();

private:
    // Device addresses inside m_results, where reductions leave what they accumulate. One
    // persistent area, allocated with the backend: a captured graph bakes these addresses in.
    struct Results {
        double* lossSum = nullptr;
        unsigned long long* correct = nullptr;
        double* sumOfSquares = nullptr;
        int* firstNonFinite = nullptr;
        float* absMax = nullptr;
        float* clipFactor = nullptr; // maxNorm / norm, when clipGradNorm must scale
        float* clipSkip = nullptr;   // 1 when it need not (or the step is skipped)
        DeviceTensorStats* tensorStats = nullptr;
    };

    // The device copy of a descriptor array (descriptor_cache.h).
    const TensorRef* deviceRefs(const std::vector<TensorRef>& refs);
    const SlotRef* deviceSlots(std::span<const OptimizerSlot> slots, std::int64_t* maxElements);
    // Copies `bytes` from device `src` into the pinned area and waits for them; refuses while
    // capturing, naming `what`.
    const void* fetch(const void* src, std::size_t bytes, const char* what);
    void checkLaunch(const char* what);

    int m_device;
    CudaOptions m_options;
    std::string m_name;
    std::shared_ptr<DeviceMemory> m_memory;
    cublasHandle_t m_cublas = nullptr;
    cudnnHandle_t m_cudnn = nullptr;
    std::unique_ptr<ConvPlans> m_conv;
    std::unique_ptr<DescriptorCache> m_descriptors;
    // Which buffers hold per-tensor FP8 elements (quantizeOperand notes them, DeviceMemory's
    // release listener forgets them), and the GEMM that multiplies them on FP8 tensor cores.
    std::shared_ptr<Fp8Operands> m_fp8Operands;
    std::unique_ptr<Fp8Matmul> m_fp8;
    bool m_bf16TensorCores = false; // sm_80 and newer
    // Persistent device memory, counted in peakBytes: the reductions' results and cuBLAS's
    // workspace (set with cublasSetWorkspace, so that cuBLAS never allocates in a capture).
    Tensor m_results, m_cublasWorkspace;
    Results m_out;
    void* m_pinned = nullptr;                  // pinned host mirror of m_results, for the host-valued calls
    std::shared_ptr<PinnedPool> m_readBuffers; // shared with the reads still in flight
    std::unique_ptr<UploadStaging> m_uploads;  // draws its blocks from m_readBuffers
};

} // namespace mantissa::cuda
