// Softmax and cross-entropy fused and kept in fp32 whatever the logits' dtype:
// exp() of fp16 logits overflows at 11.1, and a log-sum-exp in fp16 loses the loss.
// The max is subtracted first so that no exponent can overflow. Rows run in parallel, a block
// at a time (row_chunks.h); their losses are summed afterwards in row order, so that the loss
// does not depend on the thread count.
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/row_chunks.h"
#include "engine/util/check.h"

#include <cmath>
#include <vector>

namespace mantissa {

namespace {

struct RowLoss {
    double loss = 0; // log-sum-exp minus the label's logit, both less the row's max
    bool correct = false;
};

// One row's loss and, when `grad` is given, its gradient softmax - onehot, times gradScale.
// `exps` is the caller's scratch, reused across rows.
RowLoss rowLoss(const float* row, std::int64_t classes, std::int64_t label, float gradScale, float* grad,
                std::vector<double>& exps)
{
    std::int64_t best = 0;
    float maxValue = row[0];
    for (std::int64_t c = 1; c < classes; ++c) {
        if (row[c] > maxValue) {
            maxValue = row[c];
            best = c;
        }
    }
    // Each exponential is taken once, kept in `exps` for the gradient's p = exp / sum.
    exps.resize(static_cast<std::size_t>(classes));
    double sum = 0;
    for (std::int64_t c = 0; c < classes; ++c) {
        exps[c] = std::exp(static_cast<double>(row[c] - maxValue));
        sum += exps[c];
    }
    const double logSum = std::log(sum);
    if (grad) {
        const double inverseSum = 1.0 / sum;
        for (std::int64_t c = 0; c < classes; ++c) {
            const double p = exps[c] * inverseSum;
            grad[c] = static_cast<float>(p - (c == label ? 1.0 : 0.0)) * gradScale;
        }
    }
    return {logSum - static_cast<double>(row[label] - maxValue), best == label};
}

} // namespace

LossResult CpuBackend::softmaxCrossEntropy(const Tensor& logits, const Tensor& labels, float lossScale, Tensor* dlogits)
{
    const std::int64_t batch = logits.shape()[0];
    const std::int64_t classes = logits.numel() / batch;
    MANTISSA_ASSERT(labels.numel() == batch && labels.dtype() == DType::F32);
    MANTISSA_ASSERT(!dlogits || dlogits->numel() == logits.numel());
    const float* y = labels.f32();
    for (std::int64_t r = 0; r < batch; ++r) {
        const auto label = static_cast<std::int64_t>(y[r]);
        MANTISSA_ASSERT(label >= 0 && label < classes);
    }
    const float gradScale = lossScale / static_cast<float>(batch);
    std::vector<RowLoss> losses(static_cast<std::size_t>(batch));
    const auto rows = [&](const float* z, float* grad, std::int64_t first, std::int64_t count) {
        std::vector<double> exps;
        for (std::int64_t i = 0; i < count; ++i)
            losses[first + i] = rowLoss(z + i * classes, classes, static_cast<std::int64_t>(y[first + i]), gradScale,
                                        grad ? grad + i * classes : nullptr, exps);
    };
    if (dlogits)
        cpu::forRowBlocks<1, 1>(
            batch, classes, cpu::rowsPerBlock(classes), {&logits}, {dlogits}, true,
            [&](auto in, auto out, std::int64_t first, std::int64_t count) { rows(in[0], out[0], first, count); });
    else
        cpu::forRowBlocks<1, 0>(
            batch, classes, cpu::rowsPerBlock(classes), {&logits}, {}, true,
            [&](auto in, auto, std::int64_t first, std::int64_t count) { rows(in[0], nullptr, first, count); });
    double lossSum = 0;
    std::int64_t correct = 0;
    for (const RowLoss& row : losses) {
        lossSum += row.loss;
        correct += row.correct ? 1 : 0;
    }
    return {static_cast<float>(lossSum / static_cast<double>(batch)), correct};
}

} // namespace mantissa
