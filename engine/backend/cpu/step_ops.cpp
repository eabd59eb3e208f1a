// The step on the device, CPU edition: this backend's multi-tensor arithmetic (multi_tensor.cpp)
// driven by the scalars in StepScalars, so that the trainer runs one step sequence on every backend and
// the CPU stays the oracle for the device-side loss-scale logic (engine/backend/step_scalars.h).
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/dynamic_scale_rule.h"
#include "engine/util/check.h"

#include <algorithm>
#include <cmath>

namespace mantissa {

namespace {

float& at(Tensor& t, StepState s) { return t.f32()[slot(s)]; }
float at(const Tensor& t, StepState s) { return t.f32()[slot(s)]; }
float at(const Tensor& t, StepInput s) { return t.f32()[slot(s)]; }

void checkScalars(const StepScalars& s)
{
    MANTISSA_ASSERT(s.inputs.dtype() == DType::F32 && s.inputs.numel() == kStepInputCount);
    MANTISSA_ASSERT(s.state.dtype() == DType::F32 && s.state.numel() == kStepStateCount);
}

bool skipped(const StepScalars& s) { return at(s.state, StepState::Skipped) != 0.0f; }

// Read only where stochastic rounding draws by it: other callers may leave the inputs unset.
std::uint64_t roundingStep(const StepScalars& s, const MasterStore& store)
{
    if (store.rounding != MasterRounding::Stochastic)
        return 0;
    return (static_cast<std::uint64_t>(at(s.inputs, StepInput::RoundingStepHigh)) << kRoundingStepLowBits) +
           static_cast<std::uint64_t>(at(s.inputs, StepInput::RoundingStepLow));
}

} // namespace

void CpuBackend::beginStep(StepScalars& scalars)
{
    checkScalars(scalars);
    const bool hold = at(scalars.inputs, StepInput::HoldIfPreviousSkipped) != 0.0f && skipped(scalars);
    at(scalars.state, StepState::Held) = hold ? 1.0f : 0.0f;
}

void CpuBackend::softmaxCrossEntropy(const Tensor& logits, const Tensor& labels, StepScalars& scalars, Tensor& dlogits)
{
    checkScalars(scalars);
    const LossResult r = softmaxCrossEntropy(logits, labels, at(scalars.state, StepState::LossScale), &dlogits);
    at(scalars.state, StepState::Loss) = r.meanLoss;
    at(scalars.state, StepState::Correct) = static_cast<float>(r.correct);
}

void CpuBackend::meanSquaredError(const Tensor& predictions, const Tensor& targets, StepScalars& scalars,
                                  Tensor& dpredictions)
{
    checkScalars(scalars);
    const LossResult r = meanSquaredError(predictions, targets, at(scalars.state, StepState::LossScale), &dpredictions);
    at(scalars.state, StepState::Loss) = r.meanLoss;
    at(scalars.state, StepState::Correct) = 0.0f;
}

void CpuBackend::unscaleAndCheckFinite(std::span<const Tensor* const> grads, std::span<Tensor* const> fp32Grads,
                                       StepScalars& scalars, bool fusedNorm)
{
    checkScalars(scalars);
    Tensor& state = scalars.state;
    float amax = 0;
    double squares = 0;
    const int first = unscaleAndFindNonFinite(grads, fp32Grads, 1.0f / at(state, StepState::LossScale), &amax,
                                              fusedNorm ? &squares : nullptr);
    // A non-finite loss skips the step whatever the gradients hold: it is reported as the
    // forward pass's fault, which is where it happened.
    const bool lossBad = !std::isfinite(at(state, StepState::Loss));
    const bool held = at(state, StepState::Held) != 0.0f;
    const bool skip = lossBad || first >= 0 || held;
    at(state, StepState::FirstNonFinite) = lossBad ? kLossNotFinite : static_cast<float>(first);
    at(state, StepState::Skipped) = skip ? 1.0f : 0.0f;
    at(state, StepState::GradAmax) = skip ? INFINITY : amax;
    if (fusedNorm) // clipGradNorm's value, measured in this pass
        at(state, StepState::GradNorm) = skip ? NAN : static_cast<float>(std::sqrt(squares));
}

void CpuBackend::clipGradNorm(std::span<Tensor* const> fp32Grads, StepScalars& scalars, float maxNorm, bool fusedNorm)
{
    checkScalars(scalars);
    if (skipped(scalars)) {
        at(scalars.state, StepState::GradNorm) = NAN;
        return;
    }
    float norm = at(scalars.state, StepState::GradNorm);
    // A gradient left scaled (a null entry, Backend::unscaleAndCheckFinite) cannot be clipped.
    MANTISSA_ASSERT(std::ranges::none_of(fp32Grads, [](const Tensor* t) { return t == nullptr; }) ||
                    (fusedNorm && maxNorm == 0));
    if (!fusedNorm) {
        const std::vector<const Tensor*> grads(fp32Grads.begin(), fp32Grads.end());
        norm = static_cast<float>(std::sqrt(sumOfSquares(grads)));
        at(scalars.state, StepState::GradNorm) = norm;
    }
    if (maxNorm > 0 && norm > maxNorm)
        scaleInPlace(fp32Grads, maxNorm / norm);
}

void CpuBackend::sgdStep(std::span<const OptimizerSlot> slots, const SgdSettings& s, const StepScalars& scalars)
{
    checkScalars(scalars);
    if (!skipped(scalars))
        sgdUpdate(slots, s, at(scalars.inputs, StepInput::LearningRate), 1.0f / at(scalars.state, StepState::LossScale),
                  roundingStep(scalars, s.store));
}

void CpuBackend::adamStep(std::span<const OptimizerSlot> slots, const AdamSettings& s, const StepScalars& scalars)
{
    checkScalars(scalars);
    if (!skipped(scalars))
        adamUpdate(slots, s, at(scalars.inputs, StepInput::LearningRate),
                   at(scalars.inputs, StepInput::AdamCorrection1), at(scalars.inputs, StepInput::AdamCorrection2),
                   1.0f / at(scalars.state, StepState::LossScale), roundingStep(scalars, s.store));
}

void CpuBackend::updateLossScale(StepScalars& scalars, const ScaleRule& rule)
{
    checkScalars(scalars);
    Tensor& state = scalars.state;
    float& scale = at(state, StepState::LossScale);
    float& goodSteps = at(state, StepState::GoodSteps);
    float& hysteresisLeft = at(state, StepState::HysteresisLeft);
    at(state, StepState::ScaleUsed) = scale;
    if (!rule.dynamic || at(state, StepState::Held) != 0.0f)
        return;
    applyDynamicScaleRule(rule, skipped(scalars), scale, goodSteps, hysteresisLeft);
}

void CpuBackend::copyIfSkipped(const Tensor& src, Tensor& dst, const StepScalars& scalars)
{
    checkScalars(scalars);
    MANTISSA_ASSERT(src.dtype() == dst.dtype() && src.numel() == dst.numel());
    if (skipped(scalars))
        cast(src, dst);
}

} // namespace mantissa
