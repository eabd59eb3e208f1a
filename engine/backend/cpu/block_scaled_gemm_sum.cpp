#include "engine/backend/cpu/block_scaled_gemm_sum.h"

#include "engine/numerics/conversions.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace mantissa::cpu {

namespace {

// Below this many values one thread does it all: waking the team costs more than it saves.
constexpr std::int64_t kParallelFrom = std::int64_t{1} << 15;

} // namespace

void chunkScaleRows(const ChunkScales& b, std::int64_t chunks, std::int64_t n, std::int64_t rowStride, float* rows)
{
    for (std::int64_t c = 0; c < chunks; ++c)
        for (std::int64_t j0 = 0; j0 < n; j0 += b.group)
            std::fill_n(rows + c * rowStride + j0, std::min(b.group, n - j0), chunkScaleAt(b, c, j0));
}

void sumScaledChunks(const float* partials, std::int64_t chunks, std::int64_t m, std::int64_t n, ChunkScales a,
                     ChunkScales b, const float* bias, ChunkSumOutput out)
{
    thread_local std::vector<float> scalesOfB;
    if (scalesOfB.size() < static_cast<std::size_t>(chunks * n))
        scalesOfB.resize(static_cast<std::size_t>(chunks * n));
    chunkScaleRows(b, chunks, n, n, scalesOfB.data());
    const float* scalesB = scalesOfB.data();
    const bool narrow = out.type != DType::F32;
#pragma omp parallel for schedule(static) if (chunks * m * n >= kParallelFrom)
    for (std::int64_t i = 0; i < m; ++i) {
        // A 16-bit output's row is summed in a row of fp32 on this thread, still in L1 when
        // it is rounded.
        thread_local std::vector<float> rowSums;
        if (narrow && rowSums.size() < static_cast<std::size_t>(n))
            rowSums.resize(static_cast<std::size_t>(n));
        float* row = narrow ? rowSums.data() : static_cast<float*>(out.data) + i * n;
        for (std::int64_t c = 0; c < chunks; ++c) {
            const float scaleA = chunkScaleAt(a, c, i);
            const float* p = partials + (c * m + i) * n;
            const float* sb = scalesB + c * n;
            // Chunk 0 starts the sum from 0, reading its partial sum before writing the same
            // place: `out` may be the partial sums themselves when there is one chunk.
            if (c == 0)
                for (std::int64_t j = 0; j < n; ++j)
                    row[j] = std::fma(scaleA * sb[j], p[j], 0.0f);
            else
                for (std::int64_t j = 0; j < n; ++j)
                    row[j] = std::fma(scaleA * sb[j], p[j], row[j]);
        }
        if (bias)
            for (std::int64_t j = 0; j < n; ++j)
                row[j] = row[j] + bias[j];
        if (narrow)
            narrowFromFloat(row, static_cast<std::uint16_t*>(out.data) + i * n, static_cast<std::size_t>(n), out.type);
    }
}

} // namespace mantissa::cpu
