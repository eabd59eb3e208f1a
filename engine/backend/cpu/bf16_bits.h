#pragma once
// bf16 bits read where they lie by CPU kernels that work in fp32: each value widens exactly to
// the fp32 a widened copy would hold, so a kernel over them has the bits of the same kernel
// over that copy, without writing and reading the copy.
#include <bit>
#include <cstdint>

namespace mantissa::cpu {

struct Bf16Bits {
    std::uint16_t bits;
};
static_assert(sizeof(Bf16Bits) == sizeof(std::uint16_t));

inline float widened(float v) { return v; }
inline float widened(Bf16Bits v) { return std::bit_cast<float>(static_cast<std::uint32_t>(v.bits) << 16); }

} // namespace mantissa::cpu
