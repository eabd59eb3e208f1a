#pragma once
// The one entry point of the CUDA backend plugin (libmantissa-cuda.so, built from
// backend/cuda/), which the backend factory loads with dlopen when a GPU is asked for or
// listed. Keeping the backend out of the programs keeps cuBLAS, cuDNN and the CUDA runtime
// out of their link: they start on machines without CUDA, and a missing library becomes the
// reason the GPU is unavailable (cuda_plugin_loader.h) instead of a loader error at start.
// Plugin and programs come from one build (same compiler, same engine headers), so C++ types
// cross the boundary; kCudaPluginAbi and the version refuse a plugin from another build.
#include "engine/backend/backend_factory.h"

#include <memory>
#include <string>

namespace mantissa {

// Raise when this struct or the types it passes change shape.
inline constexpr int kCudaPluginAbi = 1;

struct CudaPluginApi {
    int abi = 0;                   // kCudaPluginAbi of the plugin's build
    const char* version = nullptr; // MANTISSA_VERSION of the plugin's build
    // A backend on GPU deviceIndex, or nullptr with whyNot set (no driver, no such GPU, ...).
    std::unique_ptr<Backend> (*makeBackend)(int deviceIndex, const CudaOptions& options, std::string& whyNot) = nullptr;
    // The GPUs the plugin can train on, or none and why; never throws.
    GpuInventory (*listDevices)() = nullptr;
};

} // namespace mantissa

// The plugin's exported symbol (extern "C", so dlsym finds it by this plain name).
#define MANTISSA_CUDA_PLUGIN_ENTRY "mantissa_cuda_plugin_api"
extern "C" const mantissa::CudaPluginApi* mantissa_cuda_plugin_api();
