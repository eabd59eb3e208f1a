#include "engine/train/training_backend.h"

namespace mantissa {

BackendSelection selectBackend(const TrainingSpec& training)
{
    CudaOptions cuda;
    cuda.tf32 = training.tf32;
    cuda.convWorkspaceBytes = static_cast<std::size_t>(training.cudnnWorkspaceMiB) << 20;
    return selectBackend(training.device, training.threads, cuda);
}

} // namespace mantissa
