// Softmax and cross-entropy fused and kept in fp32 whatever the logits' dtype:
// exp() of fp16 logits overflows at 11.1, and a log-sum-exp in fp16 loses the loss.
// The max is subtracted first so that no exponent can overflow.
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_view.h"
#include "engine/util/check.h"

#include <cmath>
#include <vector>

namespace mantissa {

LossResult CpuBackend::softmaxCrossEntropy(const Tensor& logits, const Tensor& labels, float lossScale, Tensor* dlogits)
{
    const std::int64_t batch = logits.shape()[0];
    const std::int64_t classes = logits.numel() / batch;
    MANTISSA_ASSERT(labels.numel() == batch && labels.dtype() == DType::F32);
    cpu::FloatInput fl(logits);
    const float* z = fl.data();
    const float* y = labels.f32();
    std::vector<float> grad(dlogits ? static_cast<std::size_t>(logits.numel()) : 0);
    double lossSum = 0;
    std::int64_t correct = 0;
    const float gradScale = lossScale / static_cast<float>(batch);
    for (std::int64_t r = 0; r < batch; ++r) {
        const float* row = z + r * classes;
        const auto label = static_cast<std::int64_t>(y[r]);
        MANTISSA_ASSERT(label >= 0 && label < classes);
        std::int64_t best = 0;
        float maxValue = row[0];
        for (std::int64_t c = 1; c < classes; ++c) {
            if (row[c] > maxValue) {
                maxValue = row[c];
                best = c;
            }
        }
        double sum = 0;
        for (std::int64_t c = 0; c < classes; ++c)
            sum += std::exp(static_cast<double>(row[c] - maxValue));
        const double logSum = std::log(sum);
        lossSum += logSum - static_cast<double>(row[label] - maxValue);
        correct += best == label ? 1 : 0;
        if (dlogits) {
            float* g = grad.data() + r * classes;
            for (std::int64_t c = 0; c < classes; ++c) {
                const double p = std::exp(static_cast<double>(row[c] - maxValue) - logSum);
                g[c] = static_cast<float>(p - (c == label ? 1.0 : 0.0)) * gradScale;
            }
        }
    }
    if (dlogits)
        upload(grad.data(), *dlogits);
    return {static_cast<float>(lossSum / static_cast<double>(batch)), correct};
}

} // namespace mantissa
