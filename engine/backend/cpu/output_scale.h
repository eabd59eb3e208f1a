#pragma once
// The epilogue of a GEMM or convolution whose operands are a recipe's FP8 elements
// (OperandScales, backend.h): the fp32 sums are multiplied by the product of the operands'
// decode scales, then the bias joins them, before the one rounding into the output's dtype
// (FloatOutput::commit). Done here rather than as oneDNN output scales because the scales
// change every step and a oneDNN primitive bakes its scales in (one per shape is cached).
#include <cstddef>
#include <cstdint>

namespace mantissa::cpu {

// c[i] *= scale for i < count.
void scaleOutput(float* c, std::size_t count, float scale);
// c[r, j] = scale * c[r, j] + bias[j] over rows of n (a linear layer's output).
void scaleRowsAddBias(float* c, std::int64_t rows, std::int64_t n, float scale, const float* bias);
// Where an operand's decode scales lie for the block-scaled GEMM (BlockScales, backend.h): the
// scale of K-chunk c at index i is data[c * chunkStride + (i / group) * indexStride]; no data:
// 1 everywhere.
struct ChunkScales {
    const float* data = nullptr;
    std::int64_t group = 1, chunkStride = 0, indexStride = 0;
};
// out[i, j] = sum over the `chunks` partial-sum matrices P_c [m, n] (partials, chunk after
// chunk) of fl(fl(a_c[i] * b_c[j]) * P_c[i, j]), added in chunk order starting from 0 (every
// product and sum rounded to fp32, never fused), then + bias[j] when `bias` is not null. With
// one chunk, `out` may be `partials` (scaled in place).
void sumScaledChunks(const float* partials, std::int64_t chunks, std::int64_t m, std::int64_t n, ChunkScales a,
                     ChunkScales b, const float* bias, float* out);
// y[i, ch, p] = scale * y[i, ch, p] + bias[ch] over [images, channels, area] (NCHW); no bias
// when `bias` is null.
void scaleChannelsAddBias(float* y, std::int64_t images, std::int64_t channels, std::int64_t area, float scale,
                          const float* bias);

} // namespace mantissa::cpu
