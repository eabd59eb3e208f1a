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

#include <cuda_runtime_api.h>

#include <cstdint>

namespace mantissa::cuda {

// --- casts.cu ---------------------------------------------------------------------------
void launchCast(const void* src, DType srcType, void* dst, DType dstType, std::int64_t n, cudaStream_t stream);
// dst[i] = value rounded to dstType.
void launchFill(void* dst, DType dstType, std::int64_t n, float value, cudaStream_t stream);

// --- activation.cu ----------------------------------------------------------------------
void launchActivationForward(Activation kind, const void* x, DType xType, void* y, DType yType, std::int64_t n,
                             cudaStream_t stream);
void launchActivationBackward(Activation kind, const void* x, DType xType, const void* y, DType yType,
                              const void* dy, DType dyType, void* dx, DType dxType, std::int64_t n,
                              cudaStream_t stream);

// --- bias.cu ----------------------------------------------------------------------------
// y[r, c] += bias[c], y is [rows, cols].
void launchAddRowBias(void* y, DType yType, const void* bias, DType biasType, std::int64_t rows, std::int64_t cols,
                      cudaStream_t stream);
// dbias[c] = sum over r of dy[r, c], accumulated in fp32.
void launchRowBiasGrad(const void* dy, DType dyType, void* dbias, DType dbiasType, std::int64_t rows,
                       std::int64_t cols, cudaStream_t stream);
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
void launchAvgPoolForward(const void* x, DType xType, void* y, DType yType, const PoolGeometry& g,
                          cudaStream_t stream);
void launchAvgPoolBackward(const void* dy, DType dyType, void* dx, DType dxType, const PoolGeometry& g,
                           cudaStream_t stream);

// --- softmax_cross_entropy.cu -------------------------------------------------------------
// Per row of logits [batch, classes]: fp32 softmax and cross-entropy against labels (fp32
// class indices). lossSum (one double) and correct (one unsigned long long) are device
// scalars the launcher zeroes and the kernel accumulates into. When dlogits is non-null it
// receives lossScale * (softmax - onehot) / batch rounded to dlogitsType.
void launchSoftmaxCrossEntropy(const void* logits, DType logitsType, const float* labels, std::int64_t batch,
                               std::int64_t classes, float lossScale, void* dlogits, DType dlogitsType,
                               double* lossSum, unsigned long long* correct, cudaStream_t stream);

// --- batch_norm.cu ------------------------------------------------------------------------
// x and y are [batch, channels, plane] (plane = H * W, or 1 for [N, C]); gamma, beta and all
// statistics are fp32 [channels]. Training: batch mean and biased variance in fp32, savedMean
// and savedInvStd written, running statistics updated as the CPU backend does; otherwise the
// running statistics normalise.
void launchBatchNormForward(const void* x, DType xType, const float* gamma, const float* beta, void* y, DType yType,
                            float* runningMean, float* runningVar, float* savedMean, float* savedInvStd,
                            std::int64_t batch, std::int64_t channels, std::int64_t plane, bool training,
                            float momentum, float epsilon, cudaStream_t stream);
void launchBatchNormBackward(const void* x, DType xType, const void* dy, DType dyType, const float* gamma,
                             const float* savedMean, const float* savedInvStd, void* dx, DType dxType, float* dgamma,
                             float* dbeta, std::int64_t batch, std::int64_t channels, std::int64_t plane,
                             cudaStream_t stream);

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
// value| over all tensors, +inf when any is non-finite.
void launchUnscaleAndCheckFinite(const TensorRef* grads, const TensorRef* fp32Out, int count,
                                 std::int64_t maxElements, float invScale, int* firstNonFinite, float* absMax,
                                 cudaStream_t stream);
// *result (device double, zeroed by the launcher) = sum of squares of every element.
void launchSumOfSquares(const TensorRef* tensors, int count, std::int64_t maxElements, double* result,
                        cudaStream_t stream);
void launchScaleInPlace(const TensorRef* tensors, int count, std::int64_t maxElements, float factor,
                        cudaStream_t stream);

// One parameter of an optimizer step (device copy of OptimizerSlot's pointers).
struct SlotRef {
    TensorRef master, grad, state1, state2, working; // working.data == nullptr: none
    bool decay = true;
};
void launchSgdStep(const SlotRef* slots, int count, std::int64_t maxElements, SgdSettings settings, float lr,
                   cudaStream_t stream);
void launchAdamStep(const SlotRef* slots, int count, std::int64_t maxElements, AdamSettings settings, float lr,
                    std::int64_t step, cudaStream_t stream);

} // namespace mantissa::cuda
