#pragma once
// Bulk conversions between fp32 and the 16-bit types, vectorised with F16C/AVX2
// where the build enables them; bit-identical to reference_conversions.h.
#include "engine/numerics/dtype.h"

#include <cstddef>
#include <cstdint>

namespace mantissa {

void floatToHalf(const float* src, std::uint16_t* dst, std::size_t n);
void halfToFloat(const std::uint16_t* src, float* dst, std::size_t n);
void floatToBFloat16(const float* src, std::uint16_t* dst, std::size_t n);
void bfloat16ToFloat(const std::uint16_t* src, float* dst, std::size_t n);

// Narrow fp32 values to a 16-bit type (dst holds 16-bit words) or widen them back.
void narrowFromFloat(const float* src, void* dst, std::size_t n, DType dstType);
void widenToFloat(const void* src, DType srcType, float* dst, std::size_t n);

// Round every value to the nearest value representable in `type`, keeping fp32 storage.
// This is how "round the inputs to the compute type" is emulated without a copy.
void roundThrough(float* data, std::size_t n, DType type);

// One value, for code that is not on a hot path.
float roundToDType(float value, DType type);

// True when the build has the F16C/AVX2 paths (otherwise the scalar reference runs).
bool conversionsAreVectorised();

// The bulk conversions take AVX-512 loops where the CPU has AVX-512 (fp32 -> bf16 only with
// avx512_bf16; conversions_avx512.h), same bits; a test turns them off to hold the AVX2 paths
// to the reference on such a CPU too. Returns the previous setting.
bool allowAvx512Conversions(bool allowed);
bool conversionsUseAvx512();

} // namespace mantissa
