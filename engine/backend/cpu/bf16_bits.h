#pragma once
// bf16 bits read where they lie by CPU kernels that work in fp32: each value widens exactly to
// the fp32 a widened copy would hold, so a kernel over them has the bits of the same kernel
// over that copy, without writing and reading the copy.
#include "engine/numerics/reference_conversions.h"

#include <cstdint>

namespace mantissa::cpu {

struct Bf16Bits {
    std::uint16_t bits;
};
static_assert(sizeof(Bf16Bits) == sizeof(std::uint16_t));

inline float widened(float v) { return v; }
inline float widened(Bf16Bits v) { return reference::bfloat16BitsToFloat(v.bits); }

} // namespace mantissa::cpu
