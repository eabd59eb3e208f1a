#pragma once
// Which path each 16-bit compute type takes on this CPU for a training.cpu_kernels request,
// and why, in words a run records and the UI shows ("bf16: native, oneDNN avx512_core_bf16";
// "fp16: emulated, ..."), so that a user knows whether a speedup is the hardware's.
#include "engine/backend/cpu_options.h"
#include "engine/numerics/dtype.h"

#include <string>

namespace mantissa::cpu {

struct CpuKernelPlan {
    CpuKernels requested = CpuKernels::Auto;
    bool nativeBf16 = false; // bf16 GEMMs and convolutions on the CPU's bf16 dot products
    bool nativeFp16 = false; // always false today: see fp16Path
    // The block-scaled GEMM (fp8-block) sums its K-chunks in registers on Mantissa's own
    // avx512_bf16 kernel (block_scaled_bf16_kernel.h) where bf16 is native and oneDNN has no
    // AMX to run instead.
    bool ownBlockScaledKernel = false;
    std::string bf16Path, fp16Path;
};

// Never throws: a forced "native" that cannot be met is reported by requireNativeKernels.
CpuKernelPlan planCpuKernels(CpuKernels requested);

// Throws ResourceError, naming what is missing and what would work, when the plan was asked
// for native kernels and `compute` (a run's compute type) has none on this CPU. fp32 needs
// no native 16-bit kernels and always passes.
void requireNativeKernels(const CpuKernelPlan& plan, DType compute);

} // namespace mantissa::cpu
