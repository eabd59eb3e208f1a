#pragma once
// The run's settings for the CUDA backend (RunConfig training.tf32 and
// training.cudnn_workspace_mib); Qt-free and CUDA-free so every build can carry them.
#include <cstddef>

namespace mantissa {

struct CudaOptions {
    // fp32 GEMMs and convolutions on TF32 tensor cores (10-bit mantissa inputs) instead of
    // true fp32. Off by default: an fp32 baseline must be fp32.
    bool tf32 = false;
    // The most scratch memory a cuDNN convolution algorithm may use.
    std::size_t convWorkspaceBytes = std::size_t{256} << 20;
};

} // namespace mantissa
