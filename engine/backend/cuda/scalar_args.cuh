#pragma once
// Reading a kernel's ScalarArg and SkipFlag (kernels.h) on the device. Every thread reads the
// same word, after the kernels before it on the stream have written it: stream order is all
// the synchronisation a step on the device needs.
#include "engine/backend/cuda/explicit_rounding.cuh"
#include "engine/backend/cuda/kernels.h"

namespace mantissa::cuda {

__device__ __forceinline__ float valueOf(const ScalarArg& a)
{
    if (!a.device)
        return a.value;
    return a.reciprocal ? exact::div(1.0f, *a.device) : *a.device;
}

__device__ __forceinline__ bool skipRequested(SkipFlag skip) { return skip && *skip != 0.0f; }

} // namespace mantissa::cuda
