#pragma once
// ReLU on 16-bit tensors as a select on the stored words: forward keeps x where x > 0 (else +0),
// backward keeps dy where x > 0 (else +0). Neither computes a new value, so widening to fp32
// and rounding back, as the general activation loops do, only costs time (a tenth of a bf16
// residual network's step went to those conversions). The results are the fp32 loops' bits:
// NaN is not > 0, and a NaN dy that passes comes back quiet, as the rounding would return it.
#include "engine/numerics/dtype.h"

#include <cstddef>
#include <cstdint>

namespace mantissa::cpu {

// x, y: n words of `type` (F16 or BF16).
void reluForwardWords(const std::uint16_t* x, std::uint16_t* y, std::size_t n, DType type);
// x, dy, dx: n words of `type` (F16 or BF16).
void reluBackwardWords(const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx, std::size_t n, DType type);

} // namespace mantissa::cpu
