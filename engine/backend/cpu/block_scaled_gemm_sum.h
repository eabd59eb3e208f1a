#pragma once
// The fp32 pass of the block-scaled GEMM (block_scaled_gemm.cpp; docs/formats.md, "The
// block-scaled FP8 GEMM"): each K-chunk's partial sums scaled by the chunk's decode scales and
// the chunks added up in order.
#include "engine/numerics/dtype.h"

#include <cstdint>

namespace mantissa::cpu {

// Where an operand's decode scales lie for the block-scaled GEMM (BlockScales, backend.h): the
// scale of K-chunk c at index i is data[c * chunkStride + (i / group) * indexStride]; no data:
// 1 everywhere.
struct ChunkScales {
    const float* data = nullptr;
    std::int64_t group = 1, chunkStride = 0, indexStride = 0;
};

// The scale of K-chunk c at index i.
inline float chunkScaleAt(const ChunkScales& s, std::int64_t c, std::int64_t i)
{
    return s.data ? s.data[c * s.chunkStride + i / s.group * s.indexStride] : 1.0f;
}
// b's scales as one row of n per chunk (row c at rows + c * rowStride), so that an inner loop
// reads them as it reads the partial sums; filled a group at a time (no division per value).
void chunkScaleRows(const ChunkScales& b, std::int64_t chunks, std::int64_t n, std::int64_t rowStride, float* rows);

// Where the sums go: [m, n] fp32 values at `data`, or, with a 16-bit `type`, [m, n] values of
// that type, each row rounded as soon as it is summed (the bits narrowFromFloat gives), so that
// no fp32 copy of the whole output crosses memory.
struct ChunkSumOutput {
    void* data = nullptr;
    DType type = DType::F32;
};

// out[i, j] = the sum over the `chunks` partial-sum matrices P_c [m, n] (partials, chunk after
// chunk), in chunk order starting from 0, of the scaled P_c: acc = fma(fl(a_c[i] * b_c[j]),
// P_c[i, j], acc), the scaled partial sum joining the running sum in one fused multiply-add (as
// DeepGEMM's promotion does on the GPU, and as this pass always computed it); then
// out = fl(acc + bias[j]) when `bias` is not null, rounded to out.type. With one chunk, an fp32
// `out` may be `partials` (scaled in place).
void sumScaledChunks(const float* partials, std::int64_t chunks, std::int64_t m, std::int64_t n, ChunkScales a,
                     ChunkScales b, const float* bias, ChunkSumOutput out);

} // namespace mantissa::cpu
