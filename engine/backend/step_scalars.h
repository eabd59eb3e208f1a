#pragma once
// The scalars of one training step, kept on the backend's device. The loss, the finite
// check, gradient clipping, the optimizer and the loss-scale update read and write them
// there, so a queued step needs nothing from the host until its record is read at the end:
// that is what lets the dynamic loss scale live on the GPU and the whole step be captured
// as a CUDA graph (Backend::captureGraph). On the CPU they are two small host tensors and
// the same ops run on them, which keeps the CPU the oracle for the device-side logic too.
//
// Counts (good steps, hysteresis, correct samples) are held as fp32, exact up to 2^24;
// LossScaler and the trainer keep them below that.
#include "engine/tensor/tensor.h"

#include <cstdint>

namespace mantissa {

// Written by the host before each step (per-step values the device cannot derive).
enum class StepInput : std::uint8_t {
    LearningRate,
    AdamCorrection1, // 1 - beta1^t for the optimizer step t this step would take
    AdamCorrection2, // 1 - beta2^t
    // 1 when the host queues this step before reading the previous step's record (running
    // ahead): if the previous step turns out skipped, this one is held (see StepState::Held).
    HoldIfPreviousSkipped,
    // The training step, which stochastic rounding of the masters draws by (update_rounding.h),
    // split so that each half is an exact fp32 integer: step = High * 2^20 + Low.
    RoundingStepLow,
    RoundingStepHigh,
    Count
};

// Carried from step to step on the device, and the step's results.
enum class StepState : std::uint8_t {
    // The loss scaler, carried: the scale the next step uses and the dynamic rule's counters.
    LossScale,
    GoodSteps,      // finite steps since the last growth or overflow
    HysteresisLeft, // overflows still tolerated before backing off
    // Results, rewritten by every step.
    ScaleUsed,      // the scale this step's loss was multiplied by
    Loss,           // mean cross-entropy, fp32
    Correct,        // samples whose arg-max equals the label
    Skipped,        // 1 when the loss or any gradient was non-finite, else 0
    FirstNonFinite, // -1 none, -2 the loss (forward pass), else the gradient's index
    GradAmax,       // largest |unscaled gradient|; +inf on a skipped step
    GradNorm,       // global L2 norm of the unscaled gradients before clipping; NaN when skipped
    // 1 when this step ran ahead of a skipped one: it changes no weights, optimizer state or
    // loss-scale state (it counts as skipped), and the host queues it again once it has
    // located the previous step's overflow on the weights that step used.
    Held,
    Count
};

constexpr std::int64_t kStepInputCount = static_cast<std::int64_t>(StepInput::Count);
constexpr std::int64_t kStepStateCount = static_cast<std::int64_t>(StepState::Count);
constexpr std::int64_t slot(StepInput s) { return static_cast<std::int64_t>(s); }
constexpr std::int64_t slot(StepState s) { return static_cast<std::int64_t>(s); }

// StepInput::RoundingStepLow holds the step's low 20 bits, RoundingStepHigh the rest.
constexpr int kRoundingStepLowBits = 20;

// FirstNonFinite's value when the loss itself was not finite.
constexpr float kLossNotFinite = -2.0f;

struct StepScalars {
    Tensor inputs; // [kStepInputCount] fp32
    Tensor state;  // [kStepStateCount] fp32
};

// The dynamic loss-scale rule as the device applies it: LossScaler's, field for field.
// `dynamic` false leaves the scale alone (none or static scaling).
struct ScaleRule {
    bool dynamic = false;
    float growthFactor = 2, backoffFactor = 0.5f;
    float growthInterval = 2000; // steps, exact in fp32 (LossScaler checks <= 2^24)
    float hysteresis = 1;
    float minScale = 1, maxScale = 16777216;
};

} // namespace mantissa
