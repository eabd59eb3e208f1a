#pragma once
// The inner loops of the fast operand quantiser (fast_operand_quantizer.cpp) for one pair of
// input and output types (bf16 or fp32 each), chosen at run time: AVX-512 (F, BW, VL) where
// the CPU has it, else portable loops that the compiler vectorises for the build's baseline.
// Both are the same IEEE single operations in the same order as fastq::roundOne, so they give
// the same bits (fast_operand_quantizer_test runs both). Private to engine/numerics.
#include "engine/numerics/fast_rounding.h"

#include <cstddef>
#include <cstdint>

namespace mantissa::fastq {

// Offsets are in elements from the buffers' starts; the returned uint32 of the rounding
// functions is the OR of the bits a bf16 output lost (0 for fp32 output).
struct SimdOps {
    // The largest |x| of in[begin, begin + n) as its bits (>= 0x7f800000: a NaN or an Inf).
    std::uint32_t (*amaxBits)(const void* in, std::size_t begin, std::size_t n);
    // amax[i] = max(amax[i], |in[begin + i]| bits) for i < n: one row of a column-wise block.
    void (*amaxLanes)(const void* in, std::size_t begin, std::size_t n, std::uint32_t* amax);
    // out = roundOne(in, multiplier, scale) over n values, one plan for all of them...
    std::uint32_t (*round)(const void* in, void* out, std::size_t begin, std::size_t n, Plan plan,
                           const ElementRounding& r);
    // ...or one plan per value (multiplier[i], scale[i]).
    std::uint32_t (*roundLanes)(const void* in, void* out, std::size_t begin, std::size_t n, const float* multiplier,
                                const float* scale, const ElementRounding& r);
    // amaxBits and round over `rows` runs of n values, each `stride` after the previous (a
    // square tile of a matrix): one call per tile rather than per row, since a row of 128
    // values is too short to pay for a call, the constants' setup and the final reduction.
    std::uint32_t (*amaxRows)(const void* in, std::size_t begin, std::size_t n, std::size_t rows, std::size_t stride);
    std::uint32_t (*roundRows)(const void* in, void* out, std::size_t begin, std::size_t n, std::size_t rows,
                               std::size_t stride, Plan plan, const ElementRounding& r);
    // amaxBits and round over the consecutive blocks of `block` values in [begin, begin + n)
    // (the last one short where `block` does not divide n), block b's amax into amax[b] and
    // its values rounded with multiplier[b] and scale[b]: one call per row of blocks rather
    // than two per block, since an MX block of 32 values is too short to pay for a call.
    void (*amaxBlocks)(const void* in, std::size_t begin, std::size_t n, std::size_t block, std::uint32_t* amax);
    std::uint32_t (*roundBlocks)(const void* in, void* out, std::size_t begin, std::size_t n, std::size_t block,
                                 const float* multiplier, const float* scale, const ElementRounding& r);
};

// Where stochastic rounding draws the random bits of value i of a call: stochasticBits(stream,
// first + i * stride), the counter the slow path gives that value (its index in the gathered span).
struct Draws {
    std::uint64_t stream = 0, first = 0, stride = 1;
};

// The stochastically rounded loops (roundOneStochastic), on AVX-512 (F, BW, VL, DQ: 64-bit
// multiplies for the random bits) where the CPU has it, else portable loops. Each returns the
// bits a bf16 output lost.
struct StochasticOps {
    // out = in rounded over n values in runs of `run` (the last one short), run j with
    // multiplier[j] and scale[j]: a row of blocks, or one run of n values with one plan.
    std::uint32_t (*runs)(const void* in, void* out, std::size_t begin, std::size_t n, std::size_t run,
                          const float* multiplier, const float* scale, const ElementRounding& r, Draws draws);
    // out = in rounded over n values, value i with multiplier[i] and scale[i] (roundLanes).
    std::uint32_t (*lanes)(const void* in, void* out, std::size_t begin, std::size_t n, const float* multiplier,
                           const float* scale, const ElementRounding& r, Draws draws);
};
const StochasticOps& stochasticOps(bool inBf16, bool outBf16);
// nullptr where the CPU lacks AVX-512 F/BW/VL/DQ (fast_quantizer_avx512.cpp).
const StochasticOps* avx512StochasticOps(bool inBf16, bool outBf16);

// The loops for bf16 or fp32 input and output, AVX-512 when the CPU has it and it is allowed.
const SimdOps& simdOps(bool inBf16, bool outBf16);
// nullptr where the CPU lacks AVX-512 F/BW/VL (fast_quantizer_avx512.cpp).
const SimdOps* avx512Ops(bool inBf16, bool outBf16);
const SimdOps& portableOps(bool inBf16, bool outBf16);

} // namespace mantissa::fastq
