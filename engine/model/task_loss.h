#pragma once
// The loss of a run's task (DatasetSplits::task): softmax cross-entropy for classification and
// language models (per token, sequence_loss.h), mean squared error for regression. Either way
// the loss is reduced in fp32 whatever the outputs' dtype, and its gradient is rounded to it.
#include "engine/backend/backend.h"
#include "engine/config/config_enums.h"

namespace mantissa {

// `outputs` [N, ...], `targets` fp32: one class index a prediction, or (regression) one value
// an output.
LossResult taskLoss(Backend& backend, DataTask task, const Tensor& outputs, const Tensor& targets, float lossScale,
                    Tensor* doutputs);
void taskLoss(Backend& backend, DataTask task, const Tensor& outputs, const Tensor& targets, StepScalars& scalars,
              Tensor& doutputs);

} // namespace mantissa
