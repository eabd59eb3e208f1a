#pragma once
// Turns a device request ("auto", "cpu", "cuda", "cuda:1") into a backend, saying which
// and why, so that users are never left guessing where their run trained.
#include "engine/backend/backend.h"

#include <memory>
#include <string>

namespace mantissa {

struct BackendSelection {
    std::unique_ptr<Backend> backend;
    std::string reason; // "no CUDA backend in this build; training on the CPU"
};

// Throws ResourceError when an explicitly requested device is unusable, ConfigError when
// the request is malformed.
BackendSelection selectBackend(const std::string& device, int cpuThreads);

// Whether this build contains the CUDA backend.
bool cudaBackendBuilt();

} // namespace mantissa
