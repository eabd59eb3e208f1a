#include "engine/model/sequence_loss.h"

#include "engine/util/check.h"

namespace mantissa {

Tensor predictionRows(const Tensor& logits)
{
    const std::int64_t classes = logits.shape().dims().back();
    return logits.reshaped({logits.numel() / classes, classes});
}

LossResult tokenCrossEntropy(Backend& backend, const Tensor& logits, const Tensor& targets, float lossScale,
                             Tensor* dlogits)
{
    const Tensor rows = predictionRows(logits);
    MANTISSA_ASSERT(targets.numel() == rows.shape()[0]);
    if (!dlogits)
        return backend.softmaxCrossEntropy(rows, targets.reshaped({rows.shape()[0]}), lossScale, nullptr);
    Tensor gradientRows = dlogits->reshaped(rows.shape());
    return backend.softmaxCrossEntropy(rows, targets.reshaped({rows.shape()[0]}), lossScale, &gradientRows);
}

void tokenCrossEntropy(Backend& backend, const Tensor& logits, const Tensor& targets, StepScalars& scalars,
                       Tensor& dlogits)
{
    const Tensor rows = predictionRows(logits);
    MANTISSA_ASSERT(targets.numel() == rows.shape()[0]);
    Tensor gradientRows = dlogits.reshaped(rows.shape());
    backend.softmaxCrossEntropy(rows, targets.reshaped({rows.shape()[0]}), scalars, gradientRows);
}

} // namespace mantissa
