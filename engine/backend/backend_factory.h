#pragma once
// Turns a device request ("auto", "cpu", "cuda", "cuda:1") into a backend, saying which
// and why, so that users are never left guessing where their run trained.
#include "engine/backend/backend.h"
#include "engine/backend/cpu_options.h"
#include "engine/backend/cuda_options.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace mantissa {

struct BackendSelection {
    std::unique_ptr<Backend> backend;
    std::string reason; // "no CUDA backend in this build; training on the CPU"
};

// Throws ResourceError when an explicitly requested device is unusable, ConfigError when
// the request is malformed.
BackendSelection selectBackend(const std::string& device, const CpuOptions& cpu, const CudaOptions& cuda = {});
inline BackendSelection selectBackend(const std::string& device, int cpuThreads, const CudaOptions& cuda = {})
{
    return selectBackend(device, CpuOptions{cpuThreads}, cuda);
}
// The same for a run's settings: engine/train/training_backend.h.

// Whether this build made the CUDA backend (a plugin, loaded when a GPU is asked for or
// listed: whether it loads on this machine is listGpus()'s and selectBackend's to say).
bool cudaBackendBuilt();

struct GpuDevice {
    int index = 0;
    std::string name; // "NVIDIA H100 80GB HBM3"
    std::size_t memoryBytes = 0;
    int computeMajor = 0, computeMinor = 0;
};

struct GpuInventory {
    std::vector<GpuDevice> devices;
    std::string whyNone; // set when `devices` is empty: "no CUDA driver found", ...
};

// The GPUs this build could train on; never throws.
GpuInventory listGpus();

} // namespace mantissa
