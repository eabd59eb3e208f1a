#include "engine/model/task_loss.h"

#include "engine/model/sequence_loss.h"
#include "engine/util/check.h"

namespace mantissa {

LossResult taskLoss(Backend& backend, DataTask task, const Tensor& outputs, const Tensor& targets, float lossScale,
                    Tensor* doutputs)
{
    if (task != DataTask::Regression)
        return tokenCrossEntropy(backend, outputs, targets, lossScale, doutputs);
    MANTISSA_ASSERT(targets.numel() == outputs.numel());
    return backend.meanSquaredError(outputs, targets, lossScale, doutputs);
}

void taskLoss(Backend& backend, DataTask task, const Tensor& outputs, const Tensor& targets, StepScalars& scalars,
              Tensor& doutputs)
{
    if (task != DataTask::Regression) {
        tokenCrossEntropy(backend, outputs, targets, scalars, doutputs);
        return;
    }
    MANTISSA_ASSERT(targets.numel() == outputs.numel());
    backend.meanSquaredError(outputs, targets, scalars, doutputs);
}

} // namespace mantissa
