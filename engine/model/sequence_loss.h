#pragma once
// Token-level cross-entropy over a sequence: logits [N, T, V] and targets [N T] (fp32 token
// ids, sample-major) are N T predictions of one token each. Viewed as [N T, V] rows, the
// backend's fused softmax cross-entropy (fp32 whatever the logits' dtype) averages the loss
// over tokens and counts correct tokens; dlogits keeps the logits' [N, T, V] shape. A
// classifier's [N, V] logits pass through unchanged, so the trainer calls these for both.
#include "engine/backend/backend.h"

namespace mantissa {

// The logits as [rows, V]: N T rows for [N, T, V], N for [N, V].
Tensor predictionRows(const Tensor& logits);

LossResult tokenCrossEntropy(Backend& backend, const Tensor& logits, const Tensor& targets, float lossScale,
                             Tensor* dlogits);
void tokenCrossEntropy(Backend& backend, const Tensor& logits, const Tensor& targets, StepScalars& scalars,
                       Tensor& dlogits);

} // namespace mantissa
