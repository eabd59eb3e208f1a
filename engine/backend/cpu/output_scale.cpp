#include "engine/backend/cpu/output_scale.h"

namespace mantissa::cpu {

namespace {
// Below this many values one thread does it all: waking the team costs more than it saves.
constexpr std::int64_t kParallelFrom = std::int64_t{1} << 15;
} // namespace

void scaleOutput(float* c, std::size_t count, float scale)
{
    const auto n = static_cast<std::int64_t>(count);
#pragma omp parallel for schedule(static) if (n >= kParallelFrom)
    for (std::int64_t i = 0; i < n; ++i)
        c[i] *= scale;
}

void scaleRowsAddBias(float* c, std::int64_t rows, std::int64_t n, float scale, const float* bias)
{
#pragma omp parallel for schedule(static) if (rows * n >= kParallelFrom)
    for (std::int64_t r = 0; r < rows; ++r) {
        float* row = c + r * n;
        // Two passes, so that the scaled sum is rounded before the bias joins it: written as one
        // expression, GCC contracted it into a fused multiply-add (one rounding), which is not
        // what the CUDA backend (__fmul_rn, then the bias) computes.
        for (std::int64_t j = 0; j < n; ++j)
            row[j] *= scale;
        for (std::int64_t j = 0; j < n; ++j)
            row[j] += bias[j];
    }
}

void scaleChannelsAddBias(float* y, std::int64_t images, std::int64_t channels, std::int64_t area, float scale,
                          const float* bias)
{
    const std::int64_t planes = images * channels;
#pragma omp parallel for schedule(static) if (planes * area >= kParallelFrom)
    for (std::int64_t plane = 0; plane < planes; ++plane) {
        float* p = y + plane * area;
        for (std::int64_t i = 0; i < area; ++i)
            p[i] *= scale;
        if (bias) // a second pass: the scaled sum is rounded before the bias joins it, never fused
            for (std::int64_t i = 0; i < area; ++i)
                p[i] += bias[plane % channels];
    }
}

void reluInPlace(float* c, std::size_t count)
{
    const auto n = static_cast<std::int64_t>(count);
#pragma omp parallel for simd schedule(static) if (n >= kParallelFrom)
    for (std::int64_t i = 0; i < n; ++i)
        c[i] = c[i] > 0 ? c[i] : 0.0f;
}

} // namespace mantissa::cpu
