#include "engine/backend/cpu/output_scale.h"

#include <vector>

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
        for (std::int64_t j = 0; j < n; ++j) {
            const float scaled = row[j] * scale; // two roundings, never a fused multiply-add
            row[j] = scaled + bias[j];
        }
    }
}

void sumScaledChunks(const float* partials, std::int64_t chunks, std::int64_t m, std::int64_t n, ChunkScales a,
                     ChunkScales b, const float* bias, float* out)
{
    const auto at = [](const ChunkScales& s, std::int64_t c, std::int64_t i) {
        return s.data ? s.data[c * s.chunkStride + i / s.group * s.indexStride] : 1.0f;
    };
    // b's scales laid out as one contiguous row per chunk, so that the inner loop vectorises.
    std::vector<float> rowOfB(static_cast<std::size_t>(chunks * n));
    for (std::int64_t c = 0; c < chunks; ++c)
        for (std::int64_t j = 0; j < n; ++j)
            rowOfB[static_cast<std::size_t>(c * n + j)] = at(b, c, j);
    const float* scalesB = rowOfB.data();
#pragma omp parallel for schedule(static) if (chunks * m * n >= kParallelFrom)
    for (std::int64_t i = 0; i < m; ++i) {
        float* row = out + i * n;
        for (std::int64_t c = 0; c < chunks; ++c) {
            const float scaleA = at(a, c, i);
            const float* p = partials + (c * m + i) * n;
            const float* sb = scalesB + c * n;
            // Chunk 0 starts the sum from 0 (0 + term, as every later chunk adds to the sum so
            // far), reading its partial sum before writing the same place: `out` may be the
            // partial sums themselves when there is one chunk.
            if (c == 0)
                for (std::int64_t j = 0; j < n; ++j) {
                    const float scale = scaleA * sb[j];
                    const float term = scale * p[j]; // each step rounded to fp32, never fused
                    row[j] = 0.0f + term;
                }
            else
                for (std::int64_t j = 0; j < n; ++j) {
                    const float scale = scaleA * sb[j];
                    const float term = scale * p[j];
                    row[j] = row[j] + term;
                }
        }
        if (bias)
            for (std::int64_t j = 0; j < n; ++j)
                row[j] = row[j] + bias[j];
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

} // namespace mantissa::cpu
