#pragma once
// Loading and storing the three storage types inside kernels. Arithmetic always runs in
// fp32: a load widens exactly, a store rounds to nearest even with subnormals and overflow
// to inf (cuda_fp16/cuda_bf16's _rn intrinsics), which is bit-for-bit what the CPU
// backend's conversions do. Kernels take `void*` plus a DType so one kernel serves every
// combination of input and output types without a template per pair at the call site.
#include "engine/numerics/dtype.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace mantissa::cuda {

__device__ __forceinline__ float loadAs(const void* base, DType dtype, std::int64_t i)
{
    switch (dtype) {
    case DType::F16: return __half2float(static_cast<const __half*>(base)[i]);
    case DType::BF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
    default: return static_cast<const float*>(base)[i];
    }
}

__device__ __forceinline__ void storeAs(void* base, DType dtype, std::int64_t i, float value)
{
    switch (dtype) {
    case DType::F16: static_cast<__half*>(base)[i] = __float2half_rn(value); break;
    case DType::BF16: static_cast<__nv_bfloat16*>(base)[i] = __float2bfloat16_rn(value); break;
    default: static_cast<float*>(base)[i] = value; break;
    }
}

// A value as it reads back after a store to `dtype` (the rounding a store would apply).
__device__ __forceinline__ float roundedTo(DType dtype, float value)
{
    switch (dtype) {
    case DType::F16: return __half2float(__float2half_rn(value));
    case DType::BF16: return __bfloat162float(__float2bfloat16_rn(value));
    default: return value;
    }
}

// Grid-stride loops over n elements; a launch covers any n with a bounded grid:
// for (i = firstIndex(); i < n; i += gridStride()).
constexpr int kThreadsPerBlock = 256;

__device__ __forceinline__ std::int64_t firstIndex()
{
    return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ std::int64_t gridStride() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }

inline unsigned blocksFor(std::int64_t n, int threads = kThreadsPerBlock)
{
    const std::int64_t blocks = (n + threads - 1) / threads;
    // Enough blocks to fill any current GPU several times over; the loop does the rest.
    return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 * 4 ? 65535 * 4 : blocks));
}

} // namespace mantissa::cuda
