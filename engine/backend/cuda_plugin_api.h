#pragma once
// The one entry point of the CUDA backend plugin (libmantissa-cuda.so, built from
// backend/cuda/), which the backend factory loads with dlopen when a GPU is asked for or
// listed. Keeping the backend out of the programs keeps cuBLAS, cuDNN and the CUDA runtime
// out of their link: they start on machines without CUDA, and a missing library becomes the
// reason the GPU is unavailable (cuda_plugin_loader.h) instead of a loader error at start.
// Plugin and programs come from one build (same compiler, same engine headers), so C++ types
// cross the boundary; kCudaPluginAbi and the version refuse a plugin from another build.
#include "engine/backend/backend_factory.h"
#include "engine/backend/device_all_reduce.h"

#include <functional>
#include <memory>
#include <string>

namespace mantissa {

// Raise when this struct or the types it passes change shape.
inline constexpr int kCudaPluginAbi = 2;

struct CudaPluginApi {
    int abi = 0;                   // kCudaPluginAbi of the plugin's build
    const char* version = nullptr; // MANTISSA_VERSION of the plugin's build
    // A backend on GPU deviceIndex, or nullptr with whyNot set (no driver, no such GPU, ...).
    std::unique_ptr<Backend> (*makeBackend)(int deviceIndex, const CudaOptions& options, std::string& whyNot) = nullptr;
    // The GPUs the plugin can train on, or none and why; never throws.
    GpuInventory (*listDevices)() = nullptr;

    // The on-device all-reduce (NCCL, opened with dlopen on first use so that the backend
    // works without it). "NCCL 2.28.9", or empty with whyNot set (this plugin was built
    // without nccl.h, or libnccl.so.2 cannot load); never throws.
    std::string (*ncclVersion)(std::string& whyNot) = nullptr;
    // A new ncclUniqueId's bytes, made on rank 0 and broadcast to the others (over MPI), or
    // empty with whyNot set.
    std::string (*ncclUniqueId)(std::string& whyNot) = nullptr;
    // Joins the NCCL communicator of `size` ranks named by `uniqueId`, as `rank`, on the device
    // of `backend` (a CUDA backend of this plugin); collective. `interruption` is polled while
    // waiting: a non-empty answer (the launcher is ending the job) abandons the wait. nullptr
    // with whyNot set when NCCL refuses.
    std::unique_ptr<DeviceAllReduce> (*makeNcclAllReduce)(Backend& backend, const std::string& uniqueId, int rank,
                                                          int size, std::function<std::string()> interruption,
                                                          std::string& whyNot) = nullptr;
};

} // namespace mantissa

// The plugin's exported symbol (extern "C", so dlsym finds it by this plain name).
#define MANTISSA_CUDA_PLUGIN_ENTRY "mantissa_cuda_plugin_api"
extern "C" const mantissa::CudaPluginApi* mantissa_cuda_plugin_api();
