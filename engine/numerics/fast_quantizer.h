#pragma once
// The fast path of quantizeDequantize (block_quantizer.h) for what a training step quantises
// most: per-tensor, fp32-block and MX scaling of E4M3, E5M2, E3M2, E2M3 and E2M1 elements with
// round-to-nearest-even, finite inputs. It computes each value straight from fp32 without
// materialising codes: the element's rounding is done on the fp32 bits (normal range: add
// half an ulp of the element format, ties to even, and cut the mantissa; subnormal range: add
// and subtract 2^(emin - M + 23), which leaves a multiple of the smallest subnormal rounded to
// nearest even), then saturation to the largest finite value, as the scaled schemes do. The
// block scales follow block_quantizer.cpp's rules, and the results are bit for bit the slow
// path's (fast_quantizer_test checks every code boundary and random tensors). The element
// loop is branch-free so that the compiler vectorises it (AVX2 in this build).
#include "engine/numerics/quant_format.h"

#include <cstddef>
#include <span>

namespace mantissa {

// Writes the quantise-dequantised `values` into `out` (which must not alias them) and returns
// true; returns false, with `out` unspecified, where the fast path does not apply (stochastic
// rounding, NVFP4, no scaling, E8M0, a NaN or Inf in the input, a layout the slow path would
// refuse), and the caller takes the slow path.
bool quantizeDequantizeFast(std::span<const float> values, std::span<float> out, std::size_t rowLength,
                            const QuantFormat& format);

} // namespace mantissa
