#include "engine/backend/cpu/cpu_kernel_plan.h"

#include "engine/backend/cpu/block_scaled_bf16_kernel.h"
#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/onednn_library.h"
#include "engine/backend/cpu/onednn_runtime.h"
#include "engine/util/check.h"

namespace mantissa::cpu {

CpuKernelPlan planCpuKernels(CpuKernels requested)
{
    CpuKernelPlan plan;
    plan.requested = requested;
    // Without oneDNN's library there are no CPU kernels at all: the plan says why, and the
    // backend's construction fails with the same words (onednn_library.h).
    if (const std::string problem = oneDnnLibraryProblem(); !problem.empty()) {
        plan.bf16Path = plan.fp16Path = "unavailable: " + problem;
        return plan;
    }
    const CpuFeatures& cpu = cpuFeatures();
    const bool bf16Available = oneDnnHasNativeBf16();
    if (requested == CpuKernels::Emulated) {
        plan.bf16Path = "emulated (training.cpu_kernels is emulated): bf16 widened to fp32, oneDNN fp32 kernels";
    } else if (bf16Available) {
        plan.nativeBf16 = true;
        plan.bf16Path = "native: oneDNN " + oneDnnIsaName() + ", bf16 products accumulated in fp32";
        plan.ownBlockScaledKernel = blockScaledBf16KernelRuns() && oneDnnIsaName() == "avx512_core_bf16";
    } else {
        plan.bf16Path = "emulated: bf16 widened to fp32, oneDNN fp32 kernels (no native bf16: oneDNN dispatches to " +
                        oneDnnIsaName() + (cpu.avx512bf16 || cpu.amxBf16 ? ", limited by ONEDNN_MAX_CPU_ISA)" : ")");
    }
    // AVX512-FP16 multiplies and accumulates in fp16, which is not the tensor-core semantics
    // (fp16 products summed in fp32) the engine defines; fp16 dot products into fp32 need
    // AMX-FP16 or AVX10.2, and oneDNN 2.6 has no fp16 CPU kernels at all.
    plan.fp16Path = std::string("emulated: fp16 widened to fp32, oneDNN fp32 kernels (") +
                    (requested == CpuKernels::Emulated ? "training.cpu_kernels is emulated"
                     : cpu.amxFp16    ? "this CPU has AMX-FP16, but oneDNN " + oneDnnVersion() + " has no fp16 kernels"
                     : cpu.avx512fp16 ? "avx512_fp16 accumulates in fp16, not fp32; no AMX-FP16"
                                      : "no fp16 dot product into fp32 on this CPU") +
                    ")";
    return plan;
}

void requireNativeKernels(const CpuKernelPlan& plan, DType compute)
{
    if (plan.requested != CpuKernels::Native || compute == DType::F32)
        return;
    if (compute == DType::BF16 && !plan.nativeBf16)
        throw ResourceError("training.cpu_kernels is native, but this CPU has no native bf16 kernels (" +
                            plan.bf16Path + "; CPU flags: " + describeCpuFeatures(cpuFeatures()) +
                            "). Native bf16 needs avx512_bf16 or AMX-BF16; use cpu_kernels auto or emulated");
    if (compute == DType::F16 && !plan.nativeFp16)
        throw ResourceError("training.cpu_kernels is native, but fp16 has no native CPU kernels here (" +
                            plan.fp16Path + "); use cpu_kernels auto or emulated, or mixed-bf16 for native bf16");
}

} // namespace mantissa::cpu
