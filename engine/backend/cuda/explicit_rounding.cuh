#pragma once
// Arithmetic whose roundings are spelled out, for kernels that reproduce the CPU backend bit
// for bit. GCC builds the CPU backend with -mfma and C++'s default -ffp-contract=fast, so a
// product whose only use is an addition becomes one fused multiply-add (one rounding, not
// two). nvcc contracts as well, but not necessarily the same pairs, and -fmad=false or
// --use_fast_math would change it again. Kernels therefore write fma() where the CPU's
// build fuses and mul()/add() where it does not, whatever flags nvcc is given.
//
// The functions are host-callable so a host test can run a kernel's element formula against
// the CPU backend; such a test must compile with -ffp-contract=off (or without FMA
// instructions) so that the separate host mul() and add() stay separate.
#include <cmath>

namespace mantissa::cuda::exact {

#if defined(__CUDA_ARCH__)
__host__ __device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__host__ __device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__host__ __device__ __forceinline__ float sub(float a, float b) { return __fsub_rn(a, b); }
__host__ __device__ __forceinline__ float div(float a, float b) { return __fdiv_rn(a, b); }
__host__ __device__ __forceinline__ float sqrt(float a) { return __fsqrt_rn(a); }
__host__ __device__ __forceinline__ float fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__host__ __device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__host__ __device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
__host__ __device__ __forceinline__ double fma(double a, double b, double c) { return __fma_rn(a, b, c); }
#else
__host__ __device__ inline float mul(float a, float b) { return a * b; }
__host__ __device__ inline float add(float a, float b) { return a + b; }
__host__ __device__ inline float sub(float a, float b) { return a - b; }
__host__ __device__ inline float div(float a, float b) { return a / b; }
__host__ __device__ inline float sqrt(float a) { return std::sqrt(a); }
__host__ __device__ inline float fma(float a, float b, float c) { return std::fma(a, b, c); }
__host__ __device__ inline double mul(double a, double b) { return a * b; }
__host__ __device__ inline double add(double a, double b) { return a + b; }
__host__ __device__ inline double fma(double a, double b, double c) { return std::fma(a, b, c); }
#endif

} // namespace mantissa::cuda::exact
