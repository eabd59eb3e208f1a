#pragma once
// The fast quantise-dequantise of one GEMM operand where it lies (issue 17's throughput
// target): it reads the operand's own bf16 or fp32 buffer in its layout, without widening or
// transposing it first, forms the blocks along K in place, and writes fp32, or bf16 when every
// quantised value is exactly a bf16. The values are bit for bit quantizeDequantize's
// (block_quantizer.h) on the same blocks, by the same arithmetic as fast_quantizer.h
// (fast_rounding.h); fast_operand_quantizer_test checks it against the slow path on every layout.
//
// Why bf16: an MX value is an element of at most 4 significant bits times a power of two, so
// it is a bf16 (8 significant bits, fp32's exponent range) unless it falls below bf16's
// smallest subnormal; the CPU then multiplies the operand natively in bf16 with the products
// summed in fp32, as it does mixed-bf16's. Whether each value fits is checked, not assumed.
#include "engine/numerics/quant_format.h"

#include <cstddef>
#include <cstdint>
#include <optional>

namespace mantissa {

// Where an operand's values lie: a row-major buffer whose blocks run along K.
//  Along:  [outer, k, inner]; a block runs along k for each (outer, inner).
//  Around: [outer, k, inner] too, but K is (outer, inner) flattened: a block runs along it for
//          each k (a convolution's weight gradient: K is batch x pixels, the rows are channels).
//  Tiles:  a matrix of outer x k (inner 1) in square tiles of `tile` x `tile`: one fp32 scale
//          each for a per-tensor format (DeepSeek-V3's 128x128), one E4M3 scale each under the
//          tensor's fp32 scale for NVFP4 (its 16x16 weight tiles; tile = blockSize = blockRows).
// Per-tensor formats ignore the layout. Schemes: per tensor (current or a given scale), fp32
// blocks, MX and NVFP4, rounded to nearest even or stochastically (not with a given scale,
// which rounds to nearest, nor a per-tensor format's 128x128 tiles).
struct FastOperand {
    enum class Layout : std::uint8_t { Along, Around, Tiles };
    const void* data = nullptr;
    bool bf16 = false; // the buffer holds bf16 bits; otherwise fp32
    Layout layout = Layout::Along;
    std::size_t outer = 1, k = 0, inner = 1;
    std::size_t tile = 0;
    // Stochastic rounding draws value v's bits at counter firstCounter + v's index in the span
    // the slow path gathers (K along rows: [outer, inner, k]; Around: [k, outer x inner]),
    // from the stream of the format's seed, so that the two paths give the same bits.
    std::uint64_t firstCounter = 0;
    std::size_t count() const { return outer * k * inner; }
};

struct FastOperandOutput {
    void* data = nullptr; // count() values in the operand's layout; must not alias its input
    bool bf16 = false;
    // Per-tensor formats only: when set, `data` receives the elements (the codes' values, not
    // yet multiplied by the tensor's decode scale) and the decode scale goes here, for the FP8
    // GEMM that multiplies elements and scales the fp32 sum once (docs/formats.md). An FP8
    // element is always a bf16, so bf16 output never needs fp32 here.
    float* decodeScale = nullptr;
    // fp32 blocks (1x128) and fp32-scaled square tiles (128x128) only: when set, `data`
    // receives the elements and each block's decode scale goes here, for the block-scaled GEMM
    // that scales each K-chunk's partial sums (Backend::gemmBlockScaled), in the order of the
    // blocks: Along with inner 1 [outer, blocks per row]; Along with inner > 1 [outer, blocks
    // along k, inner]; Around [k, blocks per row]; Tiles [row tiles, column tiles].
    float* blockScales = nullptr;
};

enum class FastResult : std::uint8_t {
    Done,
    SlowPath,  // not for the fast path: E8M0 or unscaled elements, a NaN or an
               // Inf in the operand, a partial block the format refuses; nothing useful written
    NeedsFp32, // bf16 output asked for, but a value is not exactly a bf16: ask again for fp32
};

// `fixedScale`: a per-tensor format's encode scale given by the caller (delayed scaling) rather
// than max / amax. `tensorAmax`, when given, receives the largest magnitude of a per-tensor
// operand (for the delayed-scaling history).
FastResult quantizeOperandFast(const FastOperand& in, const FastOperandOutput& out, const QuantFormat& format,
                               std::optional<float> fixedScale = std::nullopt, float* tensorAmax = nullptr);

// Whether the inner loops run on AVX-512 (chosen at run time from the CPU; the portable loops
// give the same bits). allowAvx512FastQuantizer(false) makes them portable (tests compare both);
// it returns the previous setting.
bool fastQuantizerUsesAvx512();
bool allowAvx512FastQuantizer(bool allowed);

} // namespace mantissa
