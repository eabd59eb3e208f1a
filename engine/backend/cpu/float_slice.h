#pragma once
// A slice of a tensor (one image plane, one chunk) as fp32, for kernels that walk a large
// tensor piece by piece and so need no whole-tensor copy as FloatInput/FloatOutput make:
// fp32 tensors are read and written in place, 16-bit ones through a small scratch.
#include "engine/tensor/tensor.h"

#include <cstdint>

namespace mantissa::cpu {

// `count` values of `t` from element `offset` as fp32: a pointer into an fp32 tensor, or the
// values widened into `scratch` (room for `count` floats) for a 16-bit one.
const float* readFloats(const Tensor& t, std::int64_t offset, std::int64_t count, float* scratch);

// Stores `count` fp32 values into `t` from element `offset`, rounded to t's dtype.
void writeFloats(const float* values, Tensor& t, std::int64_t offset, std::int64_t count);

} // namespace mantissa::cpu
