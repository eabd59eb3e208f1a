#pragma once
// Quantising a span of fp32 values to a QuantFormat (quant_format.h) and back: the codes, the
// scale of every block, and what the quantisation did (quant_stats.h). A GEMM emulating a
// low-precision recipe calls quantizeDequantize() on each input with rowLength = K, so that
// blocks run along the reduction dimension.
//
// The scale rules, per scheme (docs/formats.md cites each):
//  - PerTensor / Fp32Blocks: s = max(element) / amax; amax = 0 or non-finite gives s = 1, an
//    s beyond fp32 gives FLT_MAX; with powerOfTwoScales s = 2^floor(log2 s). Elements are
//    encode(x * s), values decode(code) * (1 / s) (Transformer Engine's compute_scale_from_amax).
//  - Mx: X = 2^e with e from the scale rule, clamped to E8M0's [-127, 127]; elements are
//    encode(x / X) (exact: X is a power of two), values decode(code) * X. An all-zero block
//    gets X = 2^-127 (code 0).
//  - Nvfp4: S_enc = 448 * 6 / amax(tensor) (1 when amax is 0; at most FLT_MAX); per block the
//    E4M3 code of (amax(block) / 6) * S_enc, rounded to nearest even and saturating; elements
//    encode(x * (S_enc / decoded block scale)) (Transformer Engine's NVFP4 reference quantiser);
//    values decode(code) * (decoded block scale * amax(tensor) * (1 / (6 * 448))), in that
//    order (its dequantize_fp4_kernel). A block scale of 0 (a block tiny against the tensor's
//    amax) flushes the block to zero.
// NaN and Inf: amax is taken over the finite values. In MX and NVFP4 a block holding a NaN or
// an Inf gets a NaN scale (E8M0 0xFF, E4M3 S.1111.111) and decodes as NaN, as MX v1.0 section
// 5.3 defines for a NaN scale. With fp32 scales the element's own rules apply (minifloat_codec.h,
// saturating). Stochastic rounding draws with counter firstCounter + the element's index in
// the span, so the result does not depend on how blocks are spread over threads.
#include "engine/numerics/quant_format.h"
#include "engine/numerics/quant_stats.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace mantissa {

struct BlockScale {
    float scale = 1.0f;          // the dequantisation multiplier: value = decode(code) * scale
    std::int32_t scaleCode = -1; // the E8M0 (MX) or E4M3 (NVFP4) code of the block scale; -1 for fp32 scales
    float amax = 0.0f;           // the block's largest finite magnitude
    bool clipped = false;        // its largest element saturated: it lay beyond the element format's range
    bool nanScale = false;       // a NaN or Inf in the block made its scale NaN (MX, NVFP4)
};

struct QuantizedTensor {
    QuantFormat format;
    std::size_t rowLength = 0; // values per row; blocks never cross a row
    std::size_t blockSize = 0; // values per block (the row length for None, the span for PerTensor)
    std::size_t blockRows = 1; // rows per block: 1, or the rows of a 2D tile (format.blockRows)
    std::vector<std::uint8_t> codes;
    std::vector<BlockScale> blocks; // row-major: tile row t (rows t * blockRows ...), block b at t * blocksPerRow() + b
    float tensorScale = 1.0f;       // NVFP4's fp32 per-tensor scale amax / (448 * 6); 1 otherwise

    std::size_t blocksPerRow() const { return (rowLength + blockSize - 1) / blockSize; }
    std::size_t blockOf(std::size_t index) const
    {
        return index / rowLength / blockRows * blocksPerRow() + index % rowLength / blockSize;
    }
};

// rowLength 0 means one row (the whole span). Throws ConfigError when the format is unusable,
// values.size() is not a multiple of rowLength, or (PartialBlock::Refuse) rowLength is not a
// multiple of the block size or the row count not a multiple of a 2D tile's rows; the message
// names the sizes. With format.blockRows > 1 each block is a tile of blockRows x blockSize
// (NVFP4's 16x16 weight blocks); the NVFP4 tensor scale still comes from the whole span.
QuantizedTensor quantize(std::span<const float> values, std::size_t rowLength, const QuantFormat& format,
                         std::uint64_t firstCounter = 0);
void dequantize(const QuantizedTensor& tensor, std::span<float> values);

// The ConfigError quantize() throws for a layout the format refuses: `count` values that are
// not whole rows of rowLength, a partial block or a partial tile's rows under PartialBlock::Refuse.
void checkBlockLayout(std::size_t count, std::size_t rowLength, const QuantFormat& format);

// Quantise then dequantise into `out` (may alias `values`); returns what it did.
QuantStats quantizeDequantize(std::span<const float> values, std::span<float> out, std::size_t rowLength,
                              const QuantFormat& format, std::uint64_t firstCounter = 0);

} // namespace mantissa
