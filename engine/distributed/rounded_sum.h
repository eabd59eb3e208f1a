#pragma once
// The arithmetic of a 16-bit all-reduce: inout[i] = round(in[i] + inout[i]) in `type`.
// Kept apart from MPI so that it is tested without a launch.
#include "engine/numerics/dtype.h"

#include <cstddef>
#include <cstdint>

namespace mantissa {

// Adds 16-bit words of `type` (fp16 or bf16) element-wise, rounding each sum to `type` with
// round-to-nearest-even. The sum is formed in fp32 first: fp32 has more than twice the
// significand bits of either type plus two, so rounding twice gives the correctly rounded sum.
// Of two NaNs, the one in `in` is returned (quietened), so every rank gets the same bits.
// Vectorised through the bulk conversions (engine/numerics/conversions.h); the same bits as
// addRoundedWordsReference.
void addRoundedWords(const std::uint16_t* in, std::uint16_t* inout, std::size_t n, DType type);

// The same sum one value at a time with the scalar reference conversions: the oracle the
// vectorised sum is tested against, and its baseline in bench/rounded_sum_bench.
void addRoundedWordsReference(const std::uint16_t* in, std::uint16_t* inout, std::size_t n, DType type);

} // namespace mantissa
