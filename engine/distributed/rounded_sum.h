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
void addRoundedWords(const std::uint16_t* in, std::uint16_t* inout, std::size_t n, DType type);

} // namespace mantissa
