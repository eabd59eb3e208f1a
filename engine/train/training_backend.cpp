#include "engine/train/training_backend.h"

#include "engine/backend/cpu/cpu_kernel_plan.h"
#include "engine/precision/precision_policy.h"

#include <set>

namespace mantissa {

namespace {

// Every compute type the run's layers use: the mode's, and those of per-layer overrides.
void collectComputeTypes(const std::vector<LayerSpec>& layers, const PrecisionPolicy& policy,
                         const LayerDTypes& enclosing, bool topLevel, std::set<DType>& out)
{
    for (const LayerSpec& layer : layers) {
        const LayerDTypes dtypes = topLevel ? policy.layer(layer.precision) : policy.layer(layer.precision, enclosing);
        out.insert(dtypes.compute());
        collectComputeTypes(layer.body, policy, dtypes, false, out);
    }
}

} // namespace

BackendSelection selectBackend(const RunConfig& config)
{
    const TrainingSpec& training = config.training;
    CudaOptions cuda;
    cuda.tf32 = training.tf32;
    cuda.convWorkspaceBytes = static_cast<std::size_t>(training.cudnnWorkspaceMiB) << 20;
    cuda.fp8Gemm = training.fp8Gemm;
    BackendSelection selection =
        selectBackend(training.device, CpuOptions{training.threads, training.cpuKernels}, cuda);
    if (selection.backend->device().kind == DeviceKind::Cpu && training.cpuKernels == CpuKernels::Native) {
        const PrecisionPolicy policy(config.precision);
        std::set<DType> computeTypes{policy.layer().compute()};
        collectComputeTypes(config.model.layers, policy, policy.layer(), true, computeTypes);
        const cpu::CpuKernelPlan plan = cpu::planCpuKernels(training.cpuKernels);
        for (DType compute : computeTypes)
            cpu::requireNativeKernels(plan, compute);
    }
    return selection;
}

} // namespace mantissa
