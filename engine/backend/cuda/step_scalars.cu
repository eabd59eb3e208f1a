// The step's scalars on the device (engine/backend/step_scalars.h): one-thread kernels that
// turn what the loss and multi-tensor kernels accumulated into StepState, and the dynamic
// loss-scale rule. Each reproduces engine/backend/cpu/step_ops.cpp (the oracle) bit for bit:
// every operation is spelled out with its rounding (explicit_rounding.cuh, CUDA's _rn
// intrinsics), and std::max / std::min are written as the comparisons they are, so that a
// NaN goes where the CPU sends it.
#include "engine/backend/cuda/explicit_rounding.cuh"
#include "engine/backend/cuda/kernels.h"
#include "engine/backend/dynamic_scale_rule.h"

#include <math_constants.h>

#include <climits>

namespace mantissa::cuda {

namespace {

// Indices into StepScalars::state, fixed at compile time on the host side.
constexpr int kLossScale = static_cast<int>(slot(StepState::LossScale));
constexpr int kGoodSteps = static_cast<int>(slot(StepState::GoodSteps));
constexpr int kHysteresisLeft = static_cast<int>(slot(StepState::HysteresisLeft));
constexpr int kScaleUsed = static_cast<int>(slot(StepState::ScaleUsed));
constexpr int kLoss = static_cast<int>(slot(StepState::Loss));
constexpr int kCorrect = static_cast<int>(slot(StepState::Correct));
constexpr int kSkipped = static_cast<int>(slot(StepState::Skipped));
constexpr int kFirstNonFinite = static_cast<int>(slot(StepState::FirstNonFinite));
constexpr int kGradAmax = static_cast<int>(slot(StepState::GradAmax));
constexpr int kGradNorm = static_cast<int>(slot(StepState::GradNorm));
constexpr int kHeld = static_cast<int>(slot(StepState::Held));
constexpr int kHoldIfPreviousSkipped = static_cast<int>(slot(StepInput::HoldIfPreviousSkipped));

// Running ahead: a step queued before the previous step's record was read is held when that
// step turned out skipped (it changes nothing, and the host queues it again).
__global__ void beginStepKernel(const float* inputs, float* state)
{
    const bool hold = inputs[kHoldIfPreviousSkipped] != 0.0f && state[kSkipped] != 0.0f;
    state[kHeld] = hold ? 1.0f : 0.0f;
}

__global__ void finishLossKernel(const double* lossSum, const unsigned long long* correct, double batch, float* state)
{
    // The host-valued call's float(loss / double(batch)) and float(int64 correct).
    state[kLoss] = __double2float_rn(__ddiv_rn(*lossSum, batch));
    state[kCorrect] = __ull2float_rn(*correct);
}

__global__ void finishFiniteCheckKernel(const int* firstNonFinite, const float* absMax, float* state)
{
    // A non-finite loss skips the step whatever the gradients hold, and is reported as the
    // forward pass's fault; a held step counts as skipped.
    const bool lossBad = !isfinite(state[kLoss]);
    const int first = *firstNonFinite == INT_MAX ? -1 : *firstNonFinite;
    const bool skip = lossBad || first >= 0 || state[kHeld] != 0.0f;
    state[kFirstNonFinite] = lossBad ? kLossNotFinite : static_cast<float>(first);
    state[kSkipped] = skip ? 1.0f : 0.0f;
    state[kGradAmax] = skip ? CUDART_INF_F : *absMax;
}

__global__ void finishGradNormKernel(const double* sumOfSquares, float maxNorm, float* state, float* clipFactor,
                                     float* clipSkip)
{
    *clipSkip = 1.0f;
    if (state[kSkipped] != 0.0f) {
        state[kGradNorm] = CUDART_NAN_F;
        return;
    }
    // sqrt in double is correctly rounded on both sides, then one rounding to fp32.
    const float norm = __double2float_rn(__dsqrt_rn(*sumOfSquares));
    state[kGradNorm] = norm;
    if (maxNorm > 0.0f && norm > maxNorm) {
        *clipFactor = exact::div(maxNorm, norm);
        *clipSkip = 0.0f;
    }
}

// LossScaler::update's rule (dynamic_scale_rule.h); a held step leaves the scaler alone.
__global__ void updateLossScaleKernel(float* state, ScaleRule rule)
{
    float scale = state[kLossScale];
    state[kScaleUsed] = scale;
    if (!rule.dynamic || state[kHeld] != 0.0f)
        return;
    float goodSteps = state[kGoodSteps];
    float hysteresisLeft = state[kHysteresisLeft];
    applyDynamicScaleRule(rule, state[kSkipped] != 0.0f, scale, goodSteps, hysteresisLeft);
    state[kLossScale] = scale;
    state[kGoodSteps] = goodSteps;
    state[kHysteresisLeft] = hysteresisLeft;
}

} // namespace

void launchBeginStep(const float* inputs, float* state, cudaStream_t stream)
{
    beginStepKernel<<<1, 1, 0, stream>>>(inputs, state);
}

void launchFinishLoss(const double* lossSum, const unsigned long long* correct, std::int64_t batch, float* state,
                      cudaStream_t stream)
{
    finishLossKernel<<<1, 1, 0, stream>>>(lossSum, correct, static_cast<double>(batch), state);
}

void launchFinishFiniteCheck(const int* firstNonFinite, const float* absMax, float* state, cudaStream_t stream)
{
    finishFiniteCheckKernel<<<1, 1, 0, stream>>>(firstNonFinite, absMax, state);
}

void launchFinishGradNorm(const double* sumOfSquares, float maxNorm, float* state, float* clipFactor, float* clipSkip,
                          cudaStream_t stream)
{
    finishGradNormKernel<<<1, 1, 0, stream>>>(sumOfSquares, maxNorm, state, clipFactor, clipSkip);
}

void launchUpdateLossScale(float* state, ScaleRule rule, cudaStream_t stream)
{
    updateLossScaleKernel<<<1, 1, 0, stream>>>(state, rule);
}

} // namespace mantissa::cuda
