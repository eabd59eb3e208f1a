#pragma once
// The backend contract: every op a layer, the loss, the scaler or an optimizer needs.
// The CPU backend (backend/cpu) is the oracle; the CUDA backend (backend/cuda) must
// match it within per-dtype tolerances. All tensors passed to one call live on the
// backend's device. Unless a comment says otherwise, inputs may be fp32, fp16 or bf16:
// they are widened exactly, arithmetic runs in fp32, and each output is rounded
// (round-to-nearest-even) to its own dtype. That is how tensor cores behave and it is
// what makes fp16 underflow and overflow real rather than simulated.
#include "engine/backend/cpu_options.h"
#include "engine/backend/geometry.h"
#include "engine/backend/master_store.h"
#include "engine/backend/pointwise_function.h"
#include "engine/backend/step_scalars.h"
#include "engine/numerics/tensor_stats.h"
#include "engine/tensor/tensor.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace mantissa {

struct OperandQuantization; // engine/numerics/operand_quantization.h

enum class Activation : std::uint8_t { Relu, Gelu, Tanh, Sigmoid };
// The activations' names, as layer types and as the "activation" of linear and conv2d layers
// (defined with the activation layer, engine/model/layers/activation_layer.cpp).
template <>
std::span<const EnumEntry<Activation>> enumEntries<Activation>();

enum class Transpose : std::uint8_t { No, Yes };

// The op families a backend may or may not support for a dtype (see Backend::supports).
enum class Op : std::uint8_t {
    Gemm,
    Conv2d,
    BatchNorm,
    BatchNormAcrossRanks, // BatchNormState::acrossRanks set: statistics summed across ranks mid-op
    Activation,
    Pooling,
    Dropout,
    Elementwise,
    SoftmaxCrossEntropy,
    Cast,
    MultiTensor,
    Normalization, // layer norm and RMS norm over the last dimension
    Embedding,     // token lookup, its scatter-add, broadcast addition of positions
    Attention,     // strided-batched GEMM, axis swap, attention softmax
};

// Normalisation over the last (feature) dimension: layer norm subtracts the mean and divides
// by the standard deviation; RMS norm divides by the root mean square and keeps the mean.
enum class RowNormKind : std::uint8_t { LayerNorm, RmsNorm };

struct LossResult {
    float meanLoss = 0;       // mean cross-entropy (or squared error) over the batch, fp32
    std::int64_t correct = 0; // samples whose arg-max equals the label
};

// Adds per-channel partial sums across the ranks that share one global batch (synchronised
// batch norm, docs/distributed.md): element-wise, in place, in fp32, every rank getting the same
// bits. Every rank must call it the same number of times in the same order. The data-parallel
// trainer implements it over its Communicator; a backend only calls it.
class CrossRankSum {
public:
    virtual ~CrossRankSum() = default;
    virtual void sum(std::span<float> values) = 0;
};

// Batch-norm statistics. Running statistics and the saved batch statistics are
// always fp32: a variance accumulated in fp16 loses the small differences it measures.
struct BatchNormState {
    Tensor runningMean, runningVar; // [C] fp32, updated in training
    Tensor savedMean, savedInvStd;  // [C] fp32, written by a training forward, read by backward
    // Null: the batch is this process's own. Set (training only): the batch spans the ranks,
    // the forward's statistics and the backward's input-gradient sums are those of the global
    // batch (summed through this), and the parameter gradients stay this rank's own, for the
    // trainer's gradient average. Backends without supports(Op::BatchNormAcrossRanks) assert null.
    CrossRankSum* acrossRanks = nullptr;
};

// One parameter as an optimizer step sees it.
struct OptimizerSlot {
    Tensor* master = nullptr;     // fp32 or 16-bit master weights (precision.master_weights)
    const Tensor* grad = nullptr; // fp32, already unscaled and clipped (unless scaledGrad is set)
    Tensor* state1 = nullptr;     // momentum / Adam m, in the optimizer state's dtype
    Tensor* state2 = nullptr;     // Adam v, likewise (unused by SGD)
    Tensor* working = nullptr;    // low-precision copy refreshed from master, or nullptr
    bool decay = true;            // weight decay applies (false for biases and norms)
    // Set only on a backend that unscalesInOptimizer(): the 16-bit gradient still multiplied by
    // the loss scale, whose fp32 copy (grad) unscaleAndCheckFinite measured but did not write.
    // The update reads float(scaledGrad) * (1 / state[LossScale]), the value that copy would
    // have held, so the bits are the same.
    const Tensor* scaledGrad = nullptr;
    // Kahan summation's bf16 buffer, master's shape (MasterRounding::Kahan only).
    Tensor* compensation = nullptr;
    // The parameter's index in the model, which stochastic rounding draws by.
    std::uint32_t index = 0;
};

struct SgdSettings {
    float momentum = 0, weightDecay = 0;
    bool nesterov = false;
    MasterStore store;
};

struct AdamSettings {
    float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f, weightDecay = 0;
    bool decoupledDecay = false; // AdamW
    MasterStore store;
};

// A copy to the host under way (Backend::readAsync).
class HostRead {
public:
    virtual ~HostRead() = default;
    // The values, once they have arrived (valid while this object lives).
    virtual const float* wait() = 0;
};

// A recorded training step that runs again without its host code (Backend::captureGraph).
class StepGraph {
public:
    virtual ~StepGraph() = default;
    // Queues the recorded work once more, on the same tensors, with whatever values they
    // hold now (the step's inputs are refreshed by the host between replays).
    virtual void replay() = 0;
};

// Adam's bias corrections 1 - beta1^t and 1 - beta2^t for optimizer step t, in fp32 through
// std::pow on the host: every backend and the trainer take them from here, so they agree.
struct AdamCorrections {
    float first = 1, second = 1;
};
AdamCorrections adamCorrections(const AdamSettings& s, std::int64_t step);

// The decode scales of a GEMM's two operands when they hold a recipe's per-tensor FP8
// elements instead of values (engine/model/gemm_inputs.h): the elements' products are summed in
// fp32 and the sum multiplied once by product() = fl(a * b), before any bias and the one
// rounding to the output's dtype, as FP8 tensor cores and cuBLASLt's scaled FP8 GEMMs do
// (docs/formats.md, "The FP8 GEMM"). The default {1, 1}: operands that are values.
//
// Under block scaling (fp8-block's 1x128 tiles and 128x128 blocks) an operand's decode scales
// vary along K and along its other dimension: BlockScales says where each lies, and
// Backend::gemmBlockScaled applies them to the partial sums of each K-chunk.
struct BlockScales {
    // fp32 on the backend's device; undefined: the operand has none (its values are multiplied
    // as they are, scale 1 in every chunk).
    Tensor scales;
    // K elements per chunk: K-chunk c is [c * chunk, (c + 1) * chunk), the last one short where
    // chunk does not divide K.
    std::int64_t chunk = 0;
    // The decode scale of the operand's elements in K-chunk c at index i of its other dimension
    // (m for A, n for B) is scales[c * chunkStride + (i / group) * indexStride]: group 1 for a
    // 1x128 tile per row, 128 for a 128x128 block.
    std::int64_t group = 1, chunkStride = 0, indexStride = 0;
    bool present() const { return scales.defined(); }
};

// A GEMM operand quantised by Backend::quantizeOperand: the values (or elements) the GEMM
// multiplies, the decode scale its fp32 sum is multiplied by (1 unless the values are per-tensor
// elements) and, per tensor, the operand's largest finite magnitude (the delayed-scaling history).
struct QuantizedOperand {
    Tensor values;
    float decodeScale = 1.0f;
    float amax = 0.0f;
};

// A GEMM operand quantised by Backend::quantizeOperandBlocks: the elements (bf16) and the
// blocks' decode scales (fp32).
struct QuantizedBlocks {
    Tensor elements, scales;
};

struct OperandScales {
    float a = 1.0f, b = 1.0f;
    float product() const { return a * b; }
    bool unit() const { return a == 1.0f && b == 1.0f; }
};

// The block scales of a GEMM's two operands (Backend::gemmBlockScaled).
struct OperandBlockScales {
    BlockScales a, b;
    // The chunk both present operands share (0 when neither has block scales).
    std::int64_t chunk() const { return a.present() ? a.chunk : b.present() ? b.chunk : 0; }
};

// What a backend keeps from a convolution's forward for the backward of the same convolution:
// the CPU keeps the input as its kernel read it (moved into oneDNN's blocked layout), so that
// the filter gradient does not move it there a second time. The layer holds it beside its saved
// input and hands it back only with that same input, unchanged since; empty where the backend
// keeps nothing, and then the backward works from the input alone.
struct ConvKeep {
    std::shared_ptr<const void> state;
};

class Backend {
public:
    virtual ~Backend() = default;

    // "cpu (oneDNN 2.6.3 avx512_core_bf16, 2 threads, F16C)", "cuda:0 (NVIDIA H100)": shown to users and stored with runs.
    virtual std::string name() const = 0;
    // Which kernels the 16-bit compute types run on and why, one line per type, then the
    // library kernels used so far ("bf16: native, oneDNN avx512_core_bf16 ..."); empty where
    // the backend has one path only. Stored with runs beside the device.
    virtual std::string kernelPaths() const { return {}; }
    virtual Device device() const = 0;
    // Whether `op` runs for tensors of `dtype`; callers turn false into an UnsupportedError.
    virtual bool supports(Op op, DType dtype) const = 0;

    // --- memory -----------------------------------------------------------------
    // Uninitialised tensor on this device.
    virtual Tensor empty(const Shape& shape, DType dtype) = 0;
    virtual void fill(Tensor& t, float value) = 0;
    // Host floats into `dst`, rounded to dst's dtype; and back.
    virtual void upload(const float* host, Tensor& dst) = 0;
    virtual void download(const Tensor& src, float* host) = 0;
    // Elementwise conversion between any two dtypes (same element count).
    virtual void cast(const Tensor& src, Tensor& dst) = 0;
    // Peak bytes allocated through this backend since the last reset.
    virtual std::size_t peakBytes() const = 0;
    virtual void resetPeakBytes() = 0;

    // --- dense algebra ------------------------------------------------------------
    // The dtype this backend's GEMMs read an operand of `type` in: `type` itself, except where
    // they widen it to fp32 first (the CPU's emulated 16-bit path).
    virtual DType gemmReadType(DType type) const { return type; }
    // `t` as this backend's GEMMs read it, for a layer that hands one tensor to several GEMMs
    // or reductions: where they would widen it (gemmReadType), a copy widened once, exactly,
    // which each of them then reads in place; otherwise `t` itself. Every result is unchanged.
    Tensor widenedForGemms(const Tensor& t);
    // C[m,n] = alpha * op(A) op(B) + beta * C, row-major. A and B share a dtype (the compute
    // type); products accumulate in fp32; C is rounded to its dtype. With beta != 0 the
    // previous C is read back at its own precision.
    virtual void gemm(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                      const Tensor& a, const Tensor& b, float beta, Tensor& c) = 0;
    // C[m,n] = op(A) op(B) + bias[n] on every row (a linear layer with bias): the bias is added
    // to the fp32 sum of products and C rounded once to its dtype, as conv2dForward does and as
    // cuBLASLt's bias epilogue and PyTorch's addmm do. Rounding the GEMM to 16 bits and again
    // after the bias would lose up to half an ulp twice, most of the result where they cancel.
    // With `scales` the sum is multiplied by scales.product() before the bias joins it. With
    // `relu`, C is max(0, C) (a ReLU that follows the product, as activationForward's): the same
    // bits whether applied before or after the rounding, which keeps the sign and 0, so a
    // backend may fuse it into the product's epilogue (the CPU: oneDNN's post-op).
    virtual void gemmRowBias(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k,
                             const Tensor& a, const Tensor& b, const Tensor& bias, Tensor& c, OperandScales scales = {},
                             bool relu = false) = 0;
    // The block-scaled GEMM of DeepSeek-V3's FP8 recipe (arXiv 2412.19437, section 3.3; docs/
    // formats.md, "The block-scaled FP8 GEMM"): a and b hold FP8 elements (bf16 numbers) and
    // `scales` their decode scales per K-chunk. For each chunk c the elements' products are
    // summed in fp32 into P_c[i, j]; then, chunk by chunk in order, acc =
    // fma(fl(dA_c[i] x dB_c[j]), P_c[i, j], acc) from acc = 0 (one rounding per chunk); the bias
    // (when given, bias[n]) joins after the last chunk, and C is rounded once to its dtype. An operand
    // without block scales counts 1 in every chunk. The base implementation throws
    // UnsupportedError (the CUDA backend has no such kernel; recipes run on the CPU).
    virtual void gemmBlockScaled(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k,
                                 const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
                                 const OperandBlockScales& scales);
    // dbias[c] = sum over rows of dy[r, c], accumulated in fp32.
    virtual void rowBiasGrad(const Tensor& dy, Tensor& dbias) = 0;

    // --- convolution (NCHW) ---------------------------------------------------------
    // `scales` (of x and w; dy and w; x and dy): each fp32 sum of products is multiplied by
    // scales.product() before the bias joins it and before rounding; dbias, a sum of dy alone,
    // by scales.b. With `keep`, a training forward lets the backend keep what the backward of the
    // same convolution can reuse (ConvKeep); the filter gradient takes it back as `kept`. With
    // `relu`, y is max(0, y), as gemmRowBias's.
    virtual void conv2dForward(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y, const ConvGeometry& g,
                               OperandScales scales = {}, ConvKeep* keep = nullptr, bool relu = false) = 0;
    virtual void conv2dBackwardData(const Tensor& dy, const Tensor& w, Tensor& dx, const ConvGeometry& g,
                                    OperandScales scales = {}) = 0;
    // dw (and dbias when given) from the saved input and the output gradient.
    virtual void conv2dBackwardFilter(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor* dbias,
                                      const ConvGeometry& g, OperandScales scales = {},
                                      const ConvKeep* kept = nullptr) = 0;
    // Both gradients of one convolution from one dy: conv2dBackwardFilter(x, dy, dw, dbias,
    // filterScales), then conv2dBackwardData(dy, w, dx, dataScales), with the same bits. A backend
    // may share the work on dy between them (the CPU moves dy into its kernels' blocked layout
    // once, not twice); this base implementation makes the two calls.
    virtual void conv2dBackward(const Tensor& x, const Tensor& dy, const Tensor& w, Tensor& dw, Tensor* dbias,
                                Tensor& dx, const ConvGeometry& g, OperandScales filterScales = {},
                                OperandScales dataScales = {}, const ConvKeep* kept = nullptr);

    // --- batch norm: x is [N, C] or [N, C, H, W]; gamma and beta are fp32 [C] -------
    virtual void batchNormForward(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                                  BatchNormState& state, bool training, float momentum, float epsilon) = 0;
    virtual void batchNormBackward(const Tensor& x, const Tensor& dy, const Tensor& gamma, const BatchNormState& state,
                                   Tensor& dx, Tensor& dgamma, Tensor& dbeta) = 0;

    // --- activations ------------------------------------------------------------------
    virtual void activationForward(Activation kind, const Tensor& x, Tensor& y) = 0;
    // dx from the forward input x, its output y and dy (each kind uses what it needs).
    virtual void activationBackward(Activation kind, const Tensor& x, const Tensor& y, const Tensor& dy,
                                    Tensor& dx) = 0;
    // The functions with parameters (pointwise_function.h), in fp32 whatever the dtypes; dx
    // from the forward input x and dy.
    virtual void pointwiseForward(const PointwiseFunction& f, const Tensor& x, Tensor& y) = 0;
    virtual void pointwiseBackward(const PointwiseFunction& f, const Tensor& x, const Tensor& dy, Tensor& dx) = 0;

    // --- pooling (NCHW) -----------------------------------------------------------------
    // argmax is an fp32-typed scratch tensor the size of y holding flat input offsets per plane.
    virtual void maxPoolForward(const Tensor& x, Tensor& y, Tensor& argmax, const PoolGeometry& g) = 0;
    virtual void maxPoolBackward(const Tensor& dy, const Tensor& argmax, Tensor& dx, const PoolGeometry& g) = 0;
    virtual void avgPoolForward(const Tensor& x, Tensor& y, const PoolGeometry& g) = 0;
    virtual void avgPoolBackward(const Tensor& dy, Tensor& dx, const PoolGeometry& g) = 0;

    // --- dropout: mask is fp32 {0, 1/(1-p)}, drawn from (seed, counter) so runs repeat ---
    virtual void dropoutForward(const Tensor& x, Tensor& y, Tensor& mask, float p, std::uint64_t seed,
                                std::uint64_t counter) = 0;
    virtual void dropoutBackward(const Tensor& dy, const Tensor& mask, Tensor& dx) = 0;

    // --- elementwise --------------------------------------------------------------------
    // out = a + b (residual connections); out may alias a.
    virtual void add(const Tensor& a, const Tensor& b, Tensor& out) = 0;

    // --- normalisation over the last dimension: x and y [rows, width] ----------------------
    // gain (and bias, for a layer norm that has one; null otherwise) are fp32 [width], as
    // batch norm's are. mean and invStd are fp32 [rows], written for backward and the numerics
    // lens (RMS norm writes a mean of 0). `statistics` is the arithmetic of mean and variance:
    // fp32 (two passes, the default everywhere), or a 16-bit type in which every partial sum,
    // square and quotient is rounded to it, as a kernel that computes them in the compute
    // dtype does: sums of squares beyond 65504 overflow and long sums stop growing (the setting
    // exists to show why nobody does it). Normalising and the gain run in fp32, y rounded once.
    virtual void rowNormForward(RowNormKind kind, const Tensor& x, const Tensor& gain, const Tensor* bias, Tensor& y,
                                Tensor& mean, Tensor& invStd, float epsilon, DType statistics) = 0;
    // dx, dgain (and dbias when given) from the saved statistics, all in fp32.
    virtual void rowNormBackward(RowNormKind kind, const Tensor& x, const Tensor& dy, const Tensor& gain,
                                 const Tensor& mean, const Tensor& invStd, Tensor& dx, Tensor& dgain,
                                 Tensor* dbias) = 0;

    // --- embeddings -------------------------------------------------------------------------
    // y[r, :] = table[ids[r], :]. ids is fp32 [rows] holding token ids (fp32 holds integers
    // exactly up to 2^24; bf16 only up to 256, which is why ids never take the compute type);
    // table is [vocabulary, width]. An id that is not a whole number in [0, vocabulary) throws
    // DataError naming it on the CPU; the CUDA backend, whose kernels cannot throw, writes NaN
    // into that row (the loss turns NaN) and its backward skips it. The loaders never produce
    // such ids.
    virtual void embeddingForward(const Tensor& ids, const Tensor& table, Tensor& y) = 0;
    // dtable[ids[r], :] += dy[r, :], summed in fp32 and rounded once; the sum starts from
    // dtable's values when `accumulate` (a table shared with a tied output head, whose backward
    // ran first), else from zero.
    virtual void embeddingBackward(const Tensor& ids, const Tensor& dy, Tensor& dtable, bool accumulate) = 0;
    // y[i] = x[i] + table[i % period]: the first `period` values of a table (the positions a
    // sequence uses, of a learned positional table) added to every sample.
    virtual void addBroadcast(const Tensor& x, const Tensor& table, Tensor& y, std::int64_t period) = 0;
    // Its gradient: dtable[i] = sum over samples of dy[s * period + i] for i < period, summed
    // in fp32 and rounded once; 0 for the rest of the table (positions the sequence did not use).
    virtual void addBroadcastBackward(const Tensor& dy, Tensor& dtable, std::int64_t period) = 0;

    // --- attention --------------------------------------------------------------------------
    // For i < batch: C_i = alpha * op(A_i) op(B_i) + beta * C_i, with A_i at element i * strideA
    // of a (and so on): cuBLAS's strided-batched GEMM, under gemm's precision rules.
    virtual void gemmStridedBatched(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k,
                                    float alpha, const Tensor& a, std::int64_t strideA, const Tensor& b,
                                    std::int64_t strideB, float beta, Tensor& c, std::int64_t strideC,
                                    std::int64_t batch) = 0;
    // y[o][c][r][i] = x[o][r][c][i] for x viewed as [outer, rows, cols, inner]: moves the heads
    // out of the token axis ([B, T, H, dh] to [B, H, T, dh]) and back. y is rounded to its dtype.
    virtual void swapAxes(const Tensor& x, Tensor& y, std::int64_t outer, std::int64_t rows, std::int64_t cols,
                          std::int64_t inner) = 0;
    // Softmax over the last axis of scores [planes, queries, keys] into probs. With `causal`,
    // key j > query i gets probability 0 and its score is not read. `arithmetic` F32 widens the
    // scores and computes in fp32 (the default, as fused attention kernels keep their scores);
    // a 16-bit type rounds every step to it (the max subtraction, exp, the running sum, the
    // quotient), as a softmax run in the compute dtype does, so a score of +inf makes its row
    // NaN (inf - inf), for real.
    virtual void softmaxForward(const Tensor& scores, Tensor& probs, std::int64_t queries, std::int64_t keys,
                                bool causal, DType arithmetic) = 0;
    // dscores = probs * (dprobs - sum over the row of dprobs * probs), in fp32, rounded once
    // into dscores' type (which may differ from dprobs': attention takes it in the compute type).
    virtual void softmaxBackward(const Tensor& probs, const Tensor& dprobs, Tensor& dscores, std::int64_t keys) = 0;

    // --- loss ---------------------------------------------------------------------------
    // Fused, numerically stable softmax + cross-entropy, entirely in fp32 whatever the logits'
    // dtype. labels: fp32 [N] holding class indices. When dlogits is given it receives
    // lossScale * (softmax - onehot) / N, rounded to its dtype.
    virtual LossResult softmaxCrossEntropy(const Tensor& logits, const Tensor& labels, float lossScale,
                                           Tensor* dlogits) = 0;
    // Mean squared error, in fp32 whatever the predictions' dtype (squares summed in double):
    // predictions [N, K] and fp32 targets of as many values; the loss is the mean over all
    // N K values of (prediction - target)^2. When dpredictions is given it receives
    // lossScale * 2 (prediction - target) / (N K), rounded to its dtype. `correct` is 0.
    virtual LossResult meanSquaredError(const Tensor& predictions, const Tensor& targets, float lossScale,
                                        Tensor* dpredictions) = 0;

    // --- the step on the device (engine/backend/step_scalars.h) ---------------------------
    // The loss, the finite check, clipping, the optimizers and the loss-scale rule, each over
    // all parameters at once. Every scalar comes from and goes to `scalars` on this device, so
    // none of these waits for the host or makes it wait. They are the only optimizer and
    // finite-check ops: the trainer runs this one sequence on every backend, op by op or from
    // a graph, and the tests hold the CUDA backend to the CPU's through it.
    // First of a step: Held = inputs[HoldIfPreviousSkipped] and the previous step's Skipped.
    virtual void beginStep(StepScalars& scalars) = 0;
    // Loss and Correct from the logits; dlogits = state[LossScale] * (softmax - onehot) / N.
    virtual void softmaxCrossEntropy(const Tensor& logits, const Tensor& labels, StepScalars& scalars,
                                     Tensor& dlogits) = 0;
    // Loss (Correct 0) from the predictions; dpredictions = state[LossScale] * 2 (p - t) / (N K).
    virtual void meanSquaredError(const Tensor& predictions, const Tensor& targets, StepScalars& scalars,
                                  Tensor& dpredictions) = 0;
    // fp32Grads[i] = float(grads[i]) * (1 / state[LossScale]) for every tensor, non-finite ones
    // included (statistics look at them); writes Skipped, FirstNonFinite (the index of the
    // first tensor, in the order given, that held a non-finite value, -1 when none, and
    // kLossNotFinite when state[Loss] is not finite, which also skips) and GradAmax (the
    // largest |unscaled gradient|, +inf when skipped; computed in the same pass so that every
    // step records it for loss-scale replay, engine/lens/scaler_replay.h). A held step counts
    // as skipped.
    // `fusedNorm`: the caller changes nothing in fp32Grads between this call and
    // clipGradNorm(..., fusedNorm = true), so the backend may measure GradNorm here, in the same
    // pass over the gradients (the CPU does: on mlp that pass is a fifth of an optimizer step's
    // memory traffic), and clipGradNorm then uses it.
    // A null fp32Grads[i] (only where unscalesInOptimizer(), and only with fusedNorm and no
    // clipping): grads[i] is measured as if unscaled (finite check, GradAmax, norm) but its fp32
    // copy is not written; the optimizer step unscales it as it reads it (OptimizerSlot::scaledGrad).
    virtual void unscaleAndCheckFinite(std::span<const Tensor* const> grads, std::span<Tensor* const> fp32Grads,
                                       StepScalars& scalars, bool fusedNorm = false) = 0;
    // Whether sgdStep and adamStep read OptimizerSlot::scaledGrad. Where they do, a 16-bit
    // gradient need not be widened into its fp32 copy and read back by the update: on the CPU
    // that copy is a third of mixed-fp16's optimizer traffic (issue 16).
    virtual bool unscalesInOptimizer() const { return false; }
    // GradNorm = float(sqrt(sum of squares in double)); when maxNorm > 0 and GradNorm > maxNorm
    // the gradients are scaled by maxNorm / GradNorm. A skipped step writes NaN and touches
    // nothing. With `fusedNorm` the norm may be the one unscaleAndCheckFinite measured.
    virtual void clipGradNorm(std::span<Tensor* const> fp32Grads, StepScalars& scalars, float maxNorm,
                              bool fusedNorm = false) = 0;
    // One optimizer update over all slots with inputs[LearningRate] (and Adam's corrections
    // from inputs): arithmetic in fp32, state rounded to its own dtype, master stored in its
    // dtype as the settings' MasterStore says (to nearest, stochastically, with Kahan
    // compensation), then the working copy (if any) refreshed from master in the same pass. A
    // skipped step leaves weights, state and compensation untouched.
    virtual void sgdStep(std::span<const OptimizerSlot> slots, const SgdSettings& s, const StepScalars& scalars) = 0;
    virtual void adamStep(std::span<const OptimizerSlot> slots, const AdamSettings& s, const StepScalars& scalars) = 0;
    // ScaleUsed = LossScale, then the dynamic rule (LossScaler::update, exactly) on Skipped;
    // a held step leaves the scaler's state alone.
    virtual void updateLossScale(StepScalars& scalars, const ScaleRule& rule) = 0;
    // dst = src (same dtype and size) when the step is skipped (a held step counts), else
    // nothing. A skipped step leaves no trace: the trainer puts back the batch-norm running
    // statistics its forward pass moved, which hold inf or NaN when that pass overflowed.
    virtual void copyIfSkipped(const Tensor& src, Tensor& dst, const StepScalars& scalars) = 0;

    // Starts copying fp32 `src` to the host and returns without waiting; HostRead::wait()
    // blocks until the values have landed. The base implementation downloads at once.
    virtual std::unique_ptr<HostRead> readAsync(const Tensor& src);

    // --- measuring -----------------------------------------------------------------------
    // What `target` makes of every value of `t` (engine/numerics/tensor_stats.h), measured
    // where the tensor lives, so that a GPU sends back the counts and the histogram rather
    // than the tensor.
    virtual TensorStats tensorStats(const Tensor& t, DType target, float histogramScale) = 0;

    // --- quantising a GEMM operand (sub-16-bit recipes) ------------------------------------
    // `src` (fp32 or bf16) quantised as `q` says (engine/numerics/operand_quantization.h) into
    // a new tensor of the same shape: the elements (q.elements) or the quantise-dequantised
    // values, in fp32, or in bf16 where every value is a bf16 (FP8 elements always are) and
    // q.mayBeBf16 allows it; which of the two is the backend's choice. The values are those of
    // quantizeOperandOnHost bit for bit (a NaN is a NaN). A per-tensor operand's decode scale
    // and amax come back to the host, so the call waits for the device there. The default
    // refuses (UnsupportedError).
    virtual QuantizedOperand quantizeOperand(const Tensor& src, const OperandQuantization& q);
    // The same for a GEMM that applies per-block decode scales (gemmBlockScaled), where `q` is
    // fp32-scaled blocks along K or a per-tensor format's fp32 tiles (q.tiled): the elements in
    // bf16 (FP8 elements are bf16 numbers) and `scaleCount` block decode scales in fp32, in the
    // order of the blocks (Along rows: [rows, blocks per row]; along K down the columns:
    // [blocks along K, columns]; tiles: [row tiles, column tiles]). Nothing where the backend
    // has no such quantiser (the default) or the operand needs the general one (a NaN or an
    // Inf): the caller then takes quantizeOperand's dequantised values.
    virtual std::optional<QuantizedBlocks> quantizeOperandBlocks(const Tensor& src, const OperandQuantization& q,
                                                                 std::int64_t scaleCount);
    // Whether a layer keeps a quantised GEMM operand that a backward GEMM reads again, rather
    // than quantising it again there: where quantising costs more than the memory held (the
    // CPU's quantiser); not on a GPU, where it only holds device memory.
    virtual bool keepsQuantizedOperands() const { return false; }

    // --- graphs ----------------------------------------------------------------------------
    // Records the work `body` queues through the backend it is handed, without running it,
    // into a graph that StepGraph::replay runs again. The body must queue device work only:
    // a call whose result the host reads (download, the host-valued loss) fails the capture.
    // Tensors created inside keep their memory for the graph's lifetime.
    // Returns nullptr and sets *why when this backend or this body cannot be captured.
    virtual std::unique_ptr<StepGraph> captureGraph(const std::function<void(Backend&)>& body, std::string* why) = 0;
};

// The CPU backend; always available.
std::unique_ptr<Backend> makeCpuBackend(int threads = 0);
std::unique_ptr<Backend> makeCpuBackend(const CpuOptions& options);

} // namespace mantissa
