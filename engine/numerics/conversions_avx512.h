#pragma once
// bf16 <-> fp32 sixteen lanes at a time, chosen at run time by conversions.cpp. fp32 -> bf16
// uses the CPU's own instruction (VCVTNEPS2BF16, avx512_bf16), chosen at run time
// by conversions.cpp. The instruction rounds to nearest even and quietens NaNs as our
// reference does, but reads fp32 subnormal inputs as zero; those are rounded here by the
// reference instead, so the bits stay the reference's for every input.
#include <cstddef>
#include <cstdint>

namespace mantissa::avx512 {

// True where the CPU has avx512f and avx512_bf16 (and the build is for x86-64 with GCC/Clang).
bool hasBf16Conversion();

// Converts the longest prefix of whole 16-value vectors and returns its length; the caller
// converts the rest. Call only where hasBf16Conversion().
std::size_t floatToBFloat16Prefix(const float* src, std::uint16_t* dst, std::size_t n);

// bf16 -> fp32 (exact: the bits move up 16 places), the same prefix contract; needs avx512f,
// which hasBf16Conversion() implies.
std::size_t bfloat16ToFloatPrefix(const std::uint16_t* src, float* dst, std::size_t n);

} // namespace mantissa::avx512
