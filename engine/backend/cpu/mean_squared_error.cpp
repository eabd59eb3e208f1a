// Mean squared error for regression, in fp32 whatever the predictions' dtype: each difference
// is taken in fp32 and squared in double, the rows' sums are added in row order afterwards, so
// that the loss does not depend on the thread count (as the cross-entropy's).
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/row_chunks.h"
#include "engine/util/check.h"

#include <vector>

namespace mantissa {

LossResult CpuBackend::meanSquaredError(const Tensor& predictions, const Tensor& targets, float lossScale,
                                        Tensor* dpredictions)
{
    const std::int64_t batch = predictions.shape()[0];
    const std::int64_t width = predictions.numel() / batch;
    MANTISSA_ASSERT(targets.numel() == predictions.numel() && targets.dtype() == DType::F32);
    MANTISSA_ASSERT(!dpredictions || dpredictions->numel() == predictions.numel());
    const float* t = targets.f32();
    // The same one fp32 division for every element, as the cross-entropy's lossScale / N.
    const float gradScale = 2.0f * lossScale / static_cast<float>(predictions.numel());
    std::vector<double> rowSums(static_cast<std::size_t>(batch));
    const auto rows = [&](const float* p, float* grad, std::int64_t first, std::int64_t count) {
        for (std::int64_t i = 0; i < count; ++i) {
            double sum = 0;
            for (std::int64_t k = 0; k < width; ++k) {
                const std::int64_t at = i * width + k;
                const float difference = p[at] - t[(first + i) * width + k];
                sum += static_cast<double>(difference) * difference;
                if (grad)
                    grad[at] = difference * gradScale;
            }
            rowSums[static_cast<std::size_t>(first + i)] = sum;
        }
    };
    if (dpredictions)
        cpu::forRowBlocks<1, 1>(
            batch, width, cpu::rowsPerBlock(width), {&predictions}, {dpredictions}, true,
            [&](auto in, auto out, std::int64_t first, std::int64_t count) { rows(in[0], out[0], first, count); });
    else
        cpu::forRowBlocks<1, 0>(
            batch, width, cpu::rowsPerBlock(width), {&predictions}, {}, true,
            [&](auto in, auto, std::int64_t first, std::int64_t count) { rows(in[0], nullptr, first, count); });
    double total = 0;
    for (double s : rowSums)
        total += s;
    return {static_cast<float>(total / static_cast<double>(predictions.numel())), 0};
}

} // namespace mantissa
