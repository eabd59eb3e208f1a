#pragma once
// fp32 <-> fp16 and bf16 sixteen lanes at a time, for CPUs with AVX-512; conversions.cpp
// chooses them at run time. fp16 uses VCVTPS2PH/VCVTPH2PS, the F16C instructions at twice the
// width (round to nearest even, subnormals kept). fp32 -> bf16 uses VCVTNEPS2BF16
// (avx512_bf16), which rounds to nearest even and quietens NaNs as our reference does but
// reads fp32 subnormal inputs as zero; those lanes are rounded by the reference instead. Every
// result is the reference's bits.
//
// Each function converts the longest prefix of whole 16-value vectors and returns its length;
// the caller converts the rest.
#include <cstddef>
#include <cstdint>

namespace mantissa::avx512 {

// True where the CPU has avx512f (and the build is for x86-64 with GCC or Clang).
bool hasAvx512();
// True where it also has avx512_bf16.
bool hasBf16Conversion();

std::size_t floatToHalfPrefix(const float* src, std::uint16_t* dst, std::size_t n);
std::size_t halfToFloatPrefix(const std::uint16_t* src, float* dst, std::size_t n);
// Only where hasBf16Conversion().
std::size_t floatToBFloat16Prefix(const float* src, std::uint16_t* dst, std::size_t n);
std::size_t bfloat16ToFloatPrefix(const std::uint16_t* src, float* dst, std::size_t n);

} // namespace mantissa::avx512
