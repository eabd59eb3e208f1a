#pragma once
// MANTISSA_HD marks a small function that nvcc compiles for the host and the device alike
// (the quantiser arithmetic the CUDA kernels share with the CPU, numerics/quant_arithmetic.h);
// to g++ it is a plain inline function.
#if defined(__CUDACC__)
#define MANTISSA_HD __host__ __device__ __forceinline__
#else
#define MANTISSA_HD inline
#endif
