#pragma once
// The backend a run's settings ask for (device, threads, CPU kernels, tf32, cuDNN workspace).
// It sits here rather than in backend/ so that backend/ does not depend on config/: the run
// configuration's types depend on the precision policy, which depends on backend/, and a
// folder cycle would make each half untestable without the other (tests/engine/folder_cycles_test.cmake).
#include "engine/backend/backend_factory.h"
#include "engine/config/run_config.h"

namespace mantissa {

// Throws ResourceError when an explicitly requested device is unusable, or when the run asks
// for native CPU kernels (training.cpu_kernels) that a compute type it uses lacks on this CPU;
// ConfigError when the request is malformed (see selectBackend(device, cpu, cuda)).
BackendSelection selectBackend(const RunConfig& config);

} // namespace mantissa
