#pragma once
// The fp32 pass of the block-scaled GEMM (block_scaled_gemm.cpp; docs/formats.md, "The
// block-scaled FP8 GEMM"): each K-chunk's partial sums scaled by the chunk's decode scales and
// the chunks added up in order.
#include <cstdint>

namespace mantissa::cpu {

// Where an operand's decode scales lie for the block-scaled GEMM (BlockScales, backend.h): the
// scale of K-chunk c at index i is data[c * chunkStride + (i / group) * indexStride]; no data:
// 1 everywhere.
struct ChunkScales {
    const float* data = nullptr;
    std::int64_t group = 1, chunkStride = 0, indexStride = 0;
};

// out[i, j] = the sum over the `chunks` partial-sum matrices P_c [m, n] (partials, chunk after
// chunk), in chunk order starting from 0, of the scaled P_c: acc = fma(fl(a_c[i] * b_c[j]),
// P_c[i, j], acc), the scaled partial sum joining the running sum in one fused multiply-add (as
// DeepGEMM's promotion does on the GPU, and as this pass always computed it); then
// out = fl(acc + bias[j]) when `bias` is not null. With one chunk, `out` may be `partials`
// (scaled in place).
void sumScaledChunks(const float* partials, std::int64_t chunks, std::int64_t m, std::int64_t n, ChunkScales a,
                     ChunkScales b, const float* bias, float* out);

} // namespace mantissa::cpu
