#pragma once
// Launchers of Mantissa's own CUDA kernels: the ops cuBLAS and cuDNN do not cover. Plain
// C++ (callable from host code compiled by g++); each is defined in the .cu file of its op
// family. Every launcher only enqueues work on `stream` and returns: no allocation, no
// host synchronisation, no error check beyond the launch itself (CudaBackend checks the
// stream where it has to). Pointers are device pointers; a `void*` comes with the DType of
// what it points to. Semantics are those of the CPU backend (engine/backend/cpu), which is
// the oracle the parity tests hold these kernels to: inputs widened to fp32, arithmetic in
// fp32 (reductions in fp32 or double where the CPU uses double), outputs rounded to nearest
// even in their own dtype.
#include "engine/backend/backend.h"
#include "engine/backend/dropout_hash.h"
#include "engine/backend/geometry.h"
#include "engine/numerics/dtype.h"
#include "engine/numerics/quant_arithmetic.h"
#include "engine/numerics/tensor_stats.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace mantissa::cuda {

// A kernel's scalar operand: fixed when the launch is queued (the host-valued loss), or read
// from device memory when the kernel runs (the step on the device, whose scalars never reach
// the host, and which a captured graph must read afresh at every replay). One kernel body
// serves both, so the two paths cannot drift apart.
struct ScalarArg {
    float value = 0;
    const float* device = nullptr; // when set, the operand is *device ...
    bool reciprocal = false;       // ... or, with this, 1.0f / *device (fp32 division)
};
inline ScalarArg hostScalar(float value) { return {value, nullptr, false}; }
inline ScalarArg deviceScalar(const float* at) { return {0, at, false}; }
inline ScalarArg deviceReciprocal(const float* at) { return {0, at, true}; }

// A flag in device memory that, when non-zero, makes a kernel return without writing
// anything (a skipped step, a clip that is not needed); nullptr never skips.
using SkipFlag = const float*;

// --- casts.cu ---------------------------------------------------------------------------
void launchCast(const void* src, DType srcType, void* dst, DType dstType, std::int64_t n, cudaStream_t stream);
// dst[i] = value rounded to dstType.
void launchFill(void* dst, DType dstType, std::int64_t n, float value, cudaStream_t stream);

// --- activation.cu ----------------------------------------------------------------------
void launchActivationForward(Activation kind, const void* x, DType xType, void* y, DType yType, std::int64_t n,
                             cudaStream_t stream);
void launchActivationBackward(Activation kind, const void* x, DType xType, const void* y, DType yType, const void* dy,
                              DType dyType, void* dx, DType dxType, std::int64_t n, cudaStream_t stream);

// --- pointwise.cu -----------------------------------------------------------------------
void launchPointwiseForward(const PointwiseFunction& f, const void* x, DType xType, void* y, DType yType,
                            std::int64_t n, cudaStream_t stream);
void launchPointwiseBackward(const PointwiseFunction& f, const void* x, DType xType, const void* dy, DType dyType,
                             void* dx, DType dxType, std::int64_t n, cudaStream_t stream);

// --- bias.cu ----------------------------------------------------------------------------
// y[r, c] += bias[c], y is [rows, cols].
void launchAddRowBias(void* y, DType yType, const void* bias, DType biasType, std::int64_t rows, std::int64_t cols,
                      cudaStream_t stream);
// dbias[c] = sum over r of dy[r, c], accumulated in fp32.
void launchRowBiasGrad(const void* dy, DType dyType, void* dbias, DType dbiasType, std::int64_t rows, std::int64_t cols,
                       cudaStream_t stream);
// y[n, c, p] += bias[c] for NCHW with `plane` = H * W.
void launchAddChannelBias(void* y, DType yType, const void* bias, DType biasType, std::int64_t batch,
                          std::int64_t channels, std::int64_t plane, cudaStream_t stream);
// dbias[c] = sum over n and p of dy[n, c, p], accumulated in fp32.
void launchChannelBiasGrad(const void* dy, DType dyType, void* dbias, DType dbiasType, std::int64_t batch,
                           std::int64_t channels, std::int64_t plane, cudaStream_t stream);

// --- elementwise.cu ---------------------------------------------------------------------
// out = a + b; out may alias a.
void launchAdd(const void* a, DType aType, const void* b, DType bType, void* out, DType outType, std::int64_t n,
               cudaStream_t stream);

// x[i] = fl(x[i] * factor), fp32 in place.
void launchScale(float* x, std::int64_t n, float factor, cudaStream_t stream);

// --- dropout.cu -------------------------------------------------------------------------
// The mask of element i is the CPU's (backend/dropout_hash.h):
// dropout::uniformAt(key, i) < p ? 0 : 1 / (1 - p), with key = dropout::maskKey(seed, counter).
void launchDropoutForward(const void* x, DType xType, void* y, DType yType, float* mask, std::int64_t n, float p,
                          dropout::Key key, cudaStream_t stream);
void launchDropoutBackward(const void* dy, DType dyType, const float* mask, void* dx, DType dxType, std::int64_t n,
                           cudaStream_t stream);

// --- pooling.cu -------------------------------------------------------------------------
// argmax holds, per output element, the flat offset of the chosen input within its plane
// (as a float, exactly as the CPU backend stores it).
void launchMaxPoolForward(const void* x, DType xType, void* y, DType yType, float* argmax, const PoolGeometry& g,
                          cudaStream_t stream);
// dx is zeroed and receives every dy at its argmax (overlapping windows add up in fp32).
void launchMaxPoolBackward(const void* dy, DType dyType, const float* argmax, void* dx, DType dxType,
                           const PoolGeometry& g, cudaStream_t stream);
void launchAvgPoolForward(const void* x, DType xType, void* y, DType yType, const PoolGeometry& g, cudaStream_t stream);
void launchAvgPoolBackward(const void* dy, DType dyType, void* dx, DType dxType, const PoolGeometry& g,
                           cudaStream_t stream);

// --- softmax_cross_entropy.cu -------------------------------------------------------------
// Per row of logits [batch, classes]: fp32 softmax and cross-entropy against labels (fp32
// class indices). lossSum (one double) and correct (one unsigned long long) are device
// scalars the launcher zeroes and the kernel accumulates into. When dlogits is non-null it
// receives (softmax - onehot) * (lossScale / batch), the quotient formed once in fp32,
// rounded to dlogitsType.
void launchSoftmaxCrossEntropy(const void* logits, DType logitsType, const float* labels, std::int64_t batch,
                               std::int64_t classes, ScalarArg lossScale, void* dlogits, DType dlogitsType,
                               double* lossSum, unsigned long long* correct, cudaStream_t stream);

// --- mean_squared_error.cu ----------------------------------------------------------------
// Over `count` predictions and fp32 targets: lossSum (a device double the launcher zeroes, as
// it zeroes `correct`) accumulates the squared differences; when dpredictions is non-null it
// receives (prediction - target) * (2 lossScale / count), the quotient formed once in fp32,
// rounded to dpredictionsType.
void launchMeanSquaredError(const void* predictions, DType predictionsType, const float* targets, std::int64_t count,
                            ScalarArg lossScale, void* dpredictions, DType dpredictionsType, double* lossSum,
                            unsigned long long* correct, cudaStream_t stream);

// --- batch_norm.cu ------------------------------------------------------------------------
// x and y are [batch, channels, plane] (plane = H * W, or 1 for [N, C]); gamma, beta and all
// statistics are fp32 [channels]. Training: batch mean and biased variance in fp32, savedMean
// and savedInvStd written, running statistics updated as the CPU backend does; otherwise the
// running statistics normalise. `scratch`: device memory of batchNormScratchBytes (none for
// plane 1), free for the kernels until they finish.
std::int64_t batchNormScratchBytes(std::int64_t batch, std::int64_t channels, std::int64_t plane);
void launchBatchNormForward(const void* x, DType xType, const float* gamma, const float* beta, void* y, DType yType,
                            float* runningMean, float* runningVar, float* savedMean, float* savedInvStd,
                            std::int64_t batch, std::int64_t channels, std::int64_t plane, bool training,
                            float momentum, float epsilon, void* scratch, cudaStream_t stream);
void launchBatchNormBackward(const void* x, DType xType, const void* dy, DType dyType, const float* gamma,
                             const float* savedMean, const float* savedInvStd, void* dx, DType dxType, float* dgamma,
                             float* dbeta, std::int64_t batch, std::int64_t channels, std::int64_t plane, void* scratch,
                             cudaStream_t stream);

// --- row_norm.cu ---------------------------------------------------------------------------
// Layer norm and RMS norm over the last axis of x [rows, width] (CpuBackend::rowNormForward).
// gain and bias (nullptr: none) are fp32 [width]; mean and invStd fp32 [rows]. `statistics`
// F32: two passes summed in double; a 16-bit type: the CPU's left-to-right loop with every
// step rounded to it, bit for bit.
void launchRowNormForward(RowNormKind kind, const void* x, DType xType, const float* gain, const float* bias, void* y,
                          DType yType, float* mean, float* invStd, std::int64_t rows, std::int64_t width, float epsilon,
                          DType statistics, cudaStream_t stream);
// dx from the saved statistics; dgain and dbias (nullptr: none) summed over rows in double,
// rows in order, as the CPU does.
void launchRowNormBackward(RowNormKind kind, const void* x, DType xType, const void* dy, DType dyType,
                           const float* gain, const float* mean, const float* invStd, void* dx, DType dxType,
                           float* dgain, float* dbias, std::int64_t rows, std::int64_t width, cudaStream_t stream);

// --- embedding.cu --------------------------------------------------------------------------
// y[r, :] = table[ids[r], :] (ids fp32 [rows], table [vocabulary, width]). An id that is not a
// whole number in [0, vocabulary) makes its row NaN: a kernel cannot throw the CPU's DataError.
void launchEmbeddingForward(const float* ids, const void* table, DType tableType, void* y, DType yType,
                            std::int64_t rows, std::int64_t vocabulary, std::int64_t width, cudaStream_t stream);
// dtable[v, :] = (accumulate ? dtable[v, :] : 0) + the dy rows whose id is v, added in fp32 in
// row order and rounded once: the CPU's sum, bit for bit, without atomics. An invalid id
// matches no table row.
void launchEmbeddingBackward(const float* ids, const void* dy, DType dyType, void* dtable, DType dtableType,
                             std::int64_t rows, std::int64_t vocabulary, std::int64_t width, bool accumulate,
                             cudaStream_t stream);
// y[i] = x[i] + table[i % period] for i < n.
void launchAddBroadcast(const void* x, DType xType, const void* table, DType tableType, void* y, DType yType,
                        std::int64_t n, std::int64_t period, cudaStream_t stream);
// dtable[i] = sum over samples of dy[s * period + i] (double, samples in order) for i < period,
// 0 for period <= i < tableSize.
void launchAddBroadcastBackward(const void* dy, DType dyType, void* dtable, DType dtableType, std::int64_t n,
                                std::int64_t period, std::int64_t tableSize, cudaStream_t stream);

// --- attention.cu --------------------------------------------------------------------------
// y[o][c][r][i] = x[o][r][c][i] (CpuBackend::swapAxes): a copy, rounded to y's dtype.
void launchSwapAxes(const void* x, DType xType, void* y, DType yType, std::int64_t outer, std::int64_t rows,
                    std::int64_t cols, std::int64_t inner, cudaStream_t stream);
// Softmax over rows of `keys` scores; with `causal`, row r sees keys [0, r % queries + 1 +
// keys - queries). `arithmetic` F32: fp32 max, exp and sum; a 16-bit type: the CPU's loop,
// every step rounded to it.
void launchSoftmaxForward(const void* scores, DType scoresType, void* probs, DType probsType, std::int64_t rows,
                          std::int64_t queries, std::int64_t keys, bool causal, DType arithmetic, cudaStream_t stream);
// dscores = probs * (dprobs - sum over the row of dprobs * probs), in fp32.
void launchSoftmaxBackward(const void* probs, DType probsType, const void* dprobs, DType dprobsType, void* dscores,
                           DType dscoresType, std::int64_t rows, std::int64_t keys, cudaStream_t stream);

// --- multi_tensor.cu ------------------------------------------------------------------------
// One tensor of a multi-tensor op. The arrays of these live in device memory (the backend
// copies them there), so one launch covers every parameter of a model.
struct TensorRef {
    void* data = nullptr;
    std::int64_t n = 0;
    DType dtype = DType::F32;
};

// fp32Out[i] = float(grads[i]) * invScale for every tensor. *firstNonFinite (device int,
// set to INT_MAX by the launcher) receives the smallest index of a tensor holding a
// non-finite value; *absMax (device float, zeroed by the launcher) the largest |unscaled
// value| over all tensors, +inf when any is non-finite. *sumOfSquares (device double, zeroed
// by the launcher; null: not measured) the sum of squares of the unscaled values, as
// launchSumOfSquares gives it, measured in the same pass.
void launchUnscaleAndCheckFinite(const TensorRef* grads, const TensorRef* fp32Out, int count, std::int64_t maxElements,
                                 ScalarArg invScale, int* firstNonFinite, float* absMax, double* sumOfSquares,
                                 cudaStream_t stream);
// *result (device double, zeroed by the launcher) = sum of squares of every element; left
// at zero when `skip` is set.
void launchSumOfSquares(const TensorRef* tensors, int count, std::int64_t maxElements, double* result, SkipFlag skip,
                        cudaStream_t stream);
// dst = src, `bytes` bytes, unless the step is not skipped (then nothing).
void launchCopyIfSkipped(const void* src, void* dst, std::int64_t bytes, SkipFlag skipped, cudaStream_t stream);
void launchScaleInPlace(const TensorRef* tensors, int count, std::int64_t maxElements, ScalarArg factor, SkipFlag skip,
                        cudaStream_t stream);

// One parameter of an optimizer step (device copy of OptimizerSlot's pointers).
struct SlotRef {
    TensorRef master, grad, state1, state2, working; // working.data == nullptr: none
    bool decay = true;
    TensorRef compensation; // Kahan masters only
    std::uint32_t index = 0;
};
// The training step stochastic rounding draws by, as StepInput::RoundingStepLow/High hold it.
struct RoundingStepArg {
    ScalarArg low, high;
};
void launchSgdStep(const SlotRef* slots, int count, std::int64_t maxElements, SgdSettings settings, ScalarArg lr,
                   RoundingStepArg step, SkipFlag skip, cudaStream_t stream);
// correction1 and correction2 are 1 - beta1^t and 1 - beta2^t (adamCorrections, backend.h).
void launchAdamStep(const SlotRef* slots, int count, std::int64_t maxElements, AdamSettings settings, ScalarArg lr,
                    ScalarArg correction1, ScalarArg correction2, RoundingStepArg step, SkipFlag skip,
                    cudaStream_t stream);

// Copies `bytes` host bytes to device memory at `dst` by passing them as kernel arguments:
// the driver takes a copy at launch, so the source may go at once, nothing waits and no
// pageable memory is copied from (descriptor_cache.h).
void launchWriteBytes(void* dst, const void* src, std::size_t bytes, cudaStream_t stream);

// --- quantize_operand.cu ---------------------------------------------------------------
// A GEMM operand quantised for a sub-16-bit recipe, value for value as the CPU quantiser
// does it (engine/numerics/quant_arithmetic.h, operand_quantization.h).
// *amaxBits = the fp32 bits of the largest finite |x| (0 for none); zeroed first.
void launchFiniteAmax(const void* x, DType xType, std::int64_t n, unsigned* amaxBits, cudaStream_t stream);
// Every block of `grid` over `view` with `plan`; tensorAmaxBits (NVFP4: launchFiniteAmax's
// result) completes the plan's tensor level on the device, nullptr leaves it as given.
void launchQuantizeBlocks(const void* src, DType srcType, void* dst, DType dstType, const qa::OperandPlan& plan,
                          const qa::OperandView& view, const qa::BlockGrid& grid, const unsigned* tensorAmaxBits,
                          cudaStream_t stream);
// Every value with plan.tensorPlan (per-tensor scaling); value i draws counter i.
void launchQuantizeTensor(const void* src, DType srcType, void* dst, DType dstType, std::int64_t n,
                          const qa::OperandPlan& plan, cudaStream_t stream);

// --- fp8_pack.cu ------------------------------------------------------------------------------
// FP8 elements held as bf16 into their 8-bit codes (fp8_codes.h), as a [rows, k] matrix with K
// contiguous, the layout cuBLASLt's FP8 matmul reads (fp8_gemm.cpp). `src` is [rows, k]
// row-major, or [k, rows] when `transposed` (a GEMM operand whose K runs down the columns).
void launchPackFp8(const std::uint16_t* src, std::uint8_t* dst, std::int64_t rows, std::int64_t k, bool transposed,
                   bool e5m2, cudaStream_t stream);

// --- tensor_stats.cu --------------------------------------------------------------------------
// What the numerics lens measures of one tensor (engine/numerics/tensor_stats.h), accumulated
// on the device so that only these ~550 bytes reach the host. Counts are integer atomics, so
// the result is exact and the same on every run.
struct DeviceTensorStats {
    unsigned long long zeros, underflow, subnormal, overflow, nonFinite, nan;
    unsigned long long histogram[kHistogramBins];
    unsigned int amaxBits; // of the largest finite |x| * histogramScale: non-negative floats order as their bits
};
// Zeroes *out, then classifies x[0, n) against `thresholds` (the target type's, as fp32 bit
// patterns of |x|) exactly as measureValues does on the host.
void launchTensorStats(const void* x, DType xType, std::int64_t n, RoundingThresholds thresholds, float histogramScale,
                       DeviceTensorStats* out, cudaStream_t stream);

// --- step_scalars.cu --------------------------------------------------------------------------
// One-thread kernels that turn the results of the multi-tensor and loss kernels into the
// step's scalars (engine/backend/step_scalars.h); `state` is StepScalars::state on the device.
// state[Held] = inputs[HoldIfPreviousSkipped] and the previous step's state[Skipped].
void launchBeginStep(const float* inputs, float* state, cudaStream_t stream);
// state[Loss] = float(lossSum / batch), state[Correct] = float(correct).
void launchFinishLoss(const double* lossSum, const unsigned long long* correct, std::int64_t batch, float* state,
                      cudaStream_t stream);
// FirstNonFinite, Skipped and GradAmax from the finite check's results, state[Loss] and
// state[Held].
void launchFinishFiniteCheck(const int* firstNonFinite, const float* absMax, float* state, cudaStream_t stream);
// GradNorm from the sum of squares, or NaN on a skipped step; *clipFactor = maxNorm / norm and
// *clipSkip = 0 when the gradients must be scaled, else *clipSkip = 1.
void launchFinishGradNorm(const double* sumOfSquares, float maxNorm, float* state, float* clipFactor, float* clipSkip,
                          cudaStream_t stream);
// ScaleUsed = LossScale, then (unless the step is held) LossScaler's dynamic rule on
// state[Skipped].
void launchUpdateLossScale(float* state, ScaleRule rule, cudaStream_t stream);

} // namespace mantissa::cuda
