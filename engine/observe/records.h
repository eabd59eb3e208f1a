#pragma once
// What leaves the engine while it trains: small plain structs delivered through
// TrainingObserver. Storage and the UI consume exactly these.
#include "engine/numerics/dtype.h"
#include "engine/numerics/quant_stats.h"
#include "engine/numerics/shadow_error.h"
#include "engine/numerics/tensor_stats.h"
#include "engine/precision/gemm_recipe.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mantissa {

struct StepRecord {
    std::int64_t step = 0; // 1-based optimizer step, counting skipped ones
    int epoch = 0;         // 1-based
    float loss = 0;        // unscaled mean training loss of the batch
    float learningRate = 0;
    float lossScale = 1;        // the scale used for this step's backward
    bool skipped = false;       // gradients were non-finite; no update happened
    float gradNorm = 0;         // global L2 norm of unscaled gradients (NaN/inf if skipped)
    float samplesPerSecond = 0; // this step's throughput
    double elapsedSeconds = 0;  // since the run started, training time only
    // Largest |g| over all unscaled gradients (inf when any was non-finite): with it any
    // loss-scale policy can be replayed (engine/lens/scaler_replay.h).
    float gradAmax = 0;
    // A data-parallel run that all-reduces its gradients in their 16-bit type
    // (distributed.allreduce_dtype compute): this step's nonzero values that the division before
    // the sum rounded to zero, and values finite on every rank that the sum made non-finite.
    // Unset in every other run.
    std::optional<std::int64_t> allReduceFlushed{}, allReduceOverflowed{};
};

struct EpochRecord {
    int epoch = 0;
    float trainLoss = 0, trainAccuracy = 0; // over the epoch's training steps
    float testLoss = 0, testAccuracy = 0;   // accuracy in [0, 1]
    double wallSeconds = 0;                 // since the run started, evaluation included
    // On the validation samples (data.validation_split); NaN when none are held out. Stored with
    // the epoch, shown beside the test figures.
    float validationLoss = NAN, validationAccuracy = NAN;
};

enum class EventKind : std::uint8_t { Overflow, ScaleChange, Divergence, Finished, Error };

// The four tensors the numerics lens measures per layer.
enum class TensorKind : std::uint8_t { Activation, ActivationGrad, Weight, WeightGrad };
const char* tensorKindName(TensorKind kind); // "activation", "activation_grad", "weight", "weight_grad"
std::optional<TensorKind> parseTensorKind(const std::string& name);

// Where a skipped step's first non-finite value was: the first tensor in backward order
// (activation gradients and weight gradients as backward produced them), or in forward
// order when the forward pass (the loss) was already non-finite.
struct OverflowLocation {
    int layerIndex = -1; // 0-based index in model.layers
    std::string layer;   // "3.linear"
    TensorKind kind = TensorKind::WeightGrad;
    std::string tensor; // "3.linear.weight", or the layer name for activations
    std::int64_t nonFiniteCount = 0, count = 0;
    float largestFinite = 0; // largest finite |x| in that tensor, as stored (scaled)
    // Of nonFiniteCount, the NaNs; the rest are +-Inf. An Inf is a value that overflowed
    // (a loss scale too high); a NaN with no Inf beside it is an invalid operation (0 * Inf,
    // Inf - Inf, a NaN input or a log of a negative). -1: not recorded (schema before 6).
    std::int64_t nanCount = 0;
};

// "3 Inf", "2 NaN", "3 Inf, 2 NaN", or "5 Inf or NaN" when nan is -1 (not recorded): how the
// CLI and the GUI name a tensor's non-finite values, Inf told from NaN.
std::string describeNonFinite(std::int64_t nonFinite, std::int64_t nan);

// One measured tensor of one sampled step (engine/lens/numerics_probe.h).
struct TensorNumerics {
    int layerIndex = 0;
    std::string layer; // "3.linear"
    TensorKind kind = TensorKind::Activation;
    std::string tensor;        // "3.linear.weight"; the layer name for (gradients of) activations
    DType dtype = DType::F32;  // the dtype the tensor is stored in
    DType target = DType::F16; // the dtype the fractions are measured against
    TensorStats stats;         // histogram and amax unscaled unless NumericsRecord::scaledGradients
};

// What a sub-16-bit recipe's quantisation did to one GEMM input on a sampled step
// (engine/model/gemm_inputs.h): block scale exponents, clipped blocks, values flushed to zero
// and the SQNR of the quantised tensor against its fp32 values from the same step.
struct GemmInputNumerics {
    int layerIndex = 0; // the top-level layer whose forward or backward ran the GEMM
    std::string layer;  // the layer that owns the GEMM ("3.transformer.attention" inside a block)
    GemmPass pass = GemmPass::Forward;
    GemmOperand operand = GemmOperand::Activation;
    std::string format; // operandFormatLabel(): "e2m1 mx/32 floor"
    QuantStats stats;   // one GEMM call's; a layer that runs the same GEMM twice sums them
};

struct NumericsRecord {
    std::int64_t step = 0;
    float lossScale = 1;                 // the scale this step's backward used
    bool scaledGradients = false;        // gradient histograms and amax are of scaled values
    std::vector<TensorNumerics> tensors; // by layer, then kind
    // Empty unless a recipe quantises the layers' GEMM inputs; by layer, pass, operand.
    std::vector<GemmInputNumerics> gemmInputs;
};

// The shadow error track (engine/lens/shadow_model.h): which tensor of a layer the run's
// low-precision step is compared on with the same step in fp32.
enum class ShadowTensor : std::uint8_t { Output, InputGrad, WeightGrad };
const char* shadowTensorName(ShadowTensor kind); // "output", "input_grad", "weight_grad"
std::optional<ShadowTensor> parseShadowTensor(const std::string& name);

// One tensor of one shadowed step.
struct ShadowError {
    std::string layer; // the graph node: "2.transformer.attention", an imported graph's node name
    ShadowTensor kind = ShadowTensor::Output;
    std::string tensor; // the parameter for a weight gradient ("2.transformer.attention.query.weight"), else the layer
    ErrorEnergies energies; // gradients unscaled
};

struct ShadowRecord {
    std::int64_t step = 0;
    float lossScale = 1; // the scale the step's backward used, divided out of its gradients
    // Layers in forward order; within one, its output, its input gradient, its weight gradients.
    std::vector<ShadowError> errors;
};

struct EventRecord {
    EventKind kind = EventKind::Overflow;
    std::int64_t step = 0;
    float scaleBefore = 0, scaleAfter = 0;    // Overflow and ScaleChange
    std::string parameter;                    // Overflow: first parameter whose gradient was non-finite
    std::string message;                      // Divergence, Finished (status), Error
    std::optional<OverflowLocation> location; // Overflow: where the first non-finite value was
    // Overflow of a data-parallel run: the lowest rank whose own loss or gradients were
    // non-finite before the all-reduce; -1 when none was (the 16-bit sum overflowed) or the run
    // is a single process.
    int firstRank = -1;
};

const char* eventKindName(EventKind kind);

class TrainingObserver {
public:
    virtual ~TrainingObserver() = default;
    virtual void onStep(const StepRecord&) {}
    virtual void onEpoch(const EpochRecord&) {}
    virtual void onEvent(const EventRecord&) {}
    // Per-layer statistics of a sampled step (RunConfig::numerics), after its onStep.
    virtual void onNumerics(const NumericsRecord&) {}
    // Every training.save_state_every steps, between two steps: every step up to `step` has been
    // read back and none is queued beyond it, so Trainer::saveCheckpoint saves a state that a
    // fork resumes from exactly (the run recorder does).
    virtual void onStatePoint(std::int64_t /*step*/) {}
    // Every layer of a shadowed step against its fp32 pass (numerics.shadow_every), after its onStep.
    virtual void onShadow(const ShadowRecord&) {}
};

} // namespace mantissa
