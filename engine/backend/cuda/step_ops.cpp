// The step on the device (engine/backend/step_scalars.h): the loss and multi-tensor kernels,
// with their scalars read from StepScalars on the GPU (ScalarArg, SkipFlag in kernels.h), and the
// one-thread kernels of step_scalars.cu writing the results back there. Nothing here waits
// for the device or copies from the host: a step queues all of its work at once, the host
// reads its record when it chooses, and the sequence can be captured as a CUDA graph.
// engine/backend/cpu/step_ops.cpp is the oracle.
#include "engine/backend/cuda/cuda_backend.h"

#include "engine/backend/cuda/kernels.h"
#include "engine/backend/cuda/tensor_refs.h"
#include "engine/util/check.h"

#include <vector>

namespace mantissa::cuda {

namespace {

void checkScalars(const StepScalars& s)
{
    MANTISSA_ASSERT(s.inputs.dtype() == DType::F32 && s.inputs.numel() == kStepInputCount);
    MANTISSA_ASSERT(s.state.dtype() == DType::F32 && s.state.numel() == kStepStateCount);
    MANTISSA_ASSERT(s.inputs.device().kind == DeviceKind::Cuda && s.state.device().kind == DeviceKind::Cuda);
}

const float* at(const Tensor& t, StepInput s) { return t.f32() + slot(s); }
const float* at(const Tensor& t, StepState s) { return t.f32() + slot(s); }

RoundingStepArg roundingStep(const StepScalars& s)
{
    return {deviceScalar(at(s.inputs, StepInput::RoundingStepLow)),
            deviceScalar(at(s.inputs, StepInput::RoundingStepHigh))};
}

} // namespace

void CudaBackend::beginStep(StepScalars& scalars)
{
    checkScalars(scalars);
    launchBeginStep(scalars.inputs.f32(), scalars.state.f32(), stream());
    checkLaunch("beginStep");
}

void CudaBackend::softmaxCrossEntropy(const Tensor& logits, const Tensor& labels, StepScalars& scalars, Tensor& dlogits)
{
    checkScalars(scalars);
    const std::int64_t batch = logits.shape()[0];
    const std::int64_t classes = logits.numel() / batch;
    MANTISSA_ASSERT(labels.numel() == batch && labels.dtype() == DType::F32);
    MANTISSA_ASSERT(dlogits.numel() == logits.numel());
    launchSoftmaxCrossEntropy(logits.data(), logits.dtype(), labels.f32(), batch, classes,
                              deviceScalar(at(scalars.state, StepState::LossScale)), dlogits.data(), dlogits.dtype(),
                              m_out.lossSum, m_out.correct, stream());
    checkLaunch("softmaxCrossEntropy");
    launchFinishLoss(m_out.lossSum, m_out.correct, batch, scalars.state.f32(), stream());
    checkLaunch("softmaxCrossEntropy (loss to StepScalars)");
}

void CudaBackend::meanSquaredError(const Tensor& predictions, const Tensor& targets, StepScalars& scalars,
                                   Tensor& dpredictions)
{
    checkScalars(scalars);
    const std::int64_t count = predictions.numel();
    MANTISSA_ASSERT(targets.numel() == count && targets.dtype() == DType::F32);
    MANTISSA_ASSERT(dpredictions.numel() == count);
    launchMeanSquaredError(predictions.data(), predictions.dtype(), targets.f32(), count,
                           deviceScalar(at(scalars.state, StepState::LossScale)), dpredictions.data(),
                           dpredictions.dtype(), m_out.lossSum, m_out.correct, stream());
    checkLaunch("meanSquaredError");
    launchFinishLoss(m_out.lossSum, m_out.correct, count, scalars.state.f32(), stream());
    checkLaunch("meanSquaredError (loss to StepScalars)");
}

// With `fusedNorm` the unscaling pass also sums the squares clipGradNorm needs, and
// clipGradNorm reads that sum instead of reading every gradient again (wide-mlp fp32 on an
// H100: the separate pass was 2.5% of the step).
void CudaBackend::unscaleAndCheckFinite(std::span<const Tensor* const> grads, std::span<Tensor* const> fp32Grads,
                                        StepScalars& scalars, bool fusedNorm)
{
    checkScalars(scalars);
    const std::vector<TensorRef> refs = unscaleRefs(grads, fp32Grads);
    const int count = static_cast<int>(grads.size());
    // No gradients still yields a verdict (finite, unless the loss was not).
    const TensorRef* device = refs.empty() ? nullptr : deviceRefs(refs);
    launchUnscaleAndCheckFinite(device, device ? device + count : nullptr, count, largest(refs),
                                deviceReciprocal(at(scalars.state, StepState::LossScale)), m_out.firstNonFinite,
                                m_out.absMax, fusedNorm ? m_out.sumOfSquares : nullptr, stream());
    checkLaunch("unscaleAndCheckFinite");
    launchFinishFiniteCheck(m_out.firstNonFinite, m_out.absMax, scalars.state.f32(), stream());
    checkLaunch("unscaleAndCheckFinite (verdict to StepScalars)");
}

void CudaBackend::clipGradNorm(std::span<Tensor* const> fp32Grads, StepScalars& scalars, float maxNorm, bool fusedNorm)
{
    checkScalars(scalars);
    std::vector<TensorRef> refs;
    refs.reserve(fp32Grads.size());
    for (Tensor* g : fp32Grads)
        refs.push_back(refOf(*g));
    const int count = static_cast<int>(refs.size());
    const TensorRef* device = refs.empty() ? nullptr : deviceRefs(refs);
    const float* skipped = at(scalars.state, StepState::Skipped);
    if (!fusedNorm) {
        launchSumOfSquares(device, count, largest(refs), m_out.sumOfSquares, skipped, stream());
        checkLaunch("clipGradNorm (sum of squares)");
    }
    launchFinishGradNorm(m_out.sumOfSquares, maxNorm, scalars.state.f32(), m_out.clipFactor, m_out.clipSkip, stream());
    checkLaunch("clipGradNorm (norm to StepScalars)");
    // Whether to clip is decided on the device; with no limit there is nothing to launch.
    if (maxNorm > 0 && device) {
        launchScaleInPlace(device, count, largest(refs), deviceScalar(m_out.clipFactor), m_out.clipSkip, stream());
        checkLaunch("clipGradNorm (scaling)");
    }
}

void CudaBackend::sgdStep(std::span<const OptimizerSlot> slots, const SgdSettings& s, const StepScalars& scalars)
{
    checkScalars(scalars);
    if (slots.empty())
        return;
    std::int64_t maxElements = 0;
    const SlotRef* device = deviceSlots(slots, &maxElements);
    launchSgdStep(device, static_cast<int>(slots.size()), maxElements, s,
                  deviceScalar(at(scalars.inputs, StepInput::LearningRate)), roundingStep(scalars),
                  at(scalars.state, StepState::Skipped), stream());
    checkLaunch("sgdStep");
}

void CudaBackend::adamStep(std::span<const OptimizerSlot> slots, const AdamSettings& s, const StepScalars& scalars)
{
    checkScalars(scalars);
    if (slots.empty())
        return;
    std::int64_t maxElements = 0;
    const SlotRef* device = deviceSlots(slots, &maxElements);
    launchAdamStep(device, static_cast<int>(slots.size()), maxElements, s,
                   deviceScalar(at(scalars.inputs, StepInput::LearningRate)),
                   deviceScalar(at(scalars.inputs, StepInput::AdamCorrection1)),
                   deviceScalar(at(scalars.inputs, StepInput::AdamCorrection2)), roundingStep(scalars),
                   at(scalars.state, StepState::Skipped), stream());
    checkLaunch("adamStep");
}

void CudaBackend::updateLossScale(StepScalars& scalars, const ScaleRule& rule)
{
    checkScalars(scalars);
    launchUpdateLossScale(scalars.state.f32(), rule, stream());
    checkLaunch("updateLossScale");
}

void CudaBackend::copyIfSkipped(const Tensor& src, Tensor& dst, const StepScalars& scalars)
{
    checkScalars(scalars);
    MANTISSA_ASSERT(src.dtype() == dst.dtype() && src.numel() == dst.numel());
    launchCopyIfSkipped(src.data(), dst.data(), static_cast<std::int64_t>(src.bytes()),
                        at(scalars.state, StepState::Skipped), stream());
    checkLaunch("copyIfSkipped");
}

} // namespace mantissa::cuda
