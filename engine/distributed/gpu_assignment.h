#pragma once
// Which GPU each rank of a data-parallel launch trains on: one rank per GPU, the GPU of the
// rank's place on its node (its local rank, from the launcher's environment), so that
// `mpirun -np 4` on a 4-GPU machine puts one replica on each. A pure function of the launch,
// the device asked for and the GPUs this node has, so that every refusal is tested without
// a GPU (distributed_test).
#include "engine/distributed/launch_environment.h"

#include <string>

namespace mantissa {

struct GpuAssignment {
    // The device this rank's backend is made for: training.device itself ("cpu", "auto",
    // "cuda:1") when no GPU needs assigning, else "cuda:<local rank>".
    std::string device;
    // Set when this rank cannot have a GPU of its own; the run must not start.
    std::string error;
};

// `device` is training.device; `gpuCount` the GPUs this node has (listGpus), `whyNoGpu` why
// there are none; `host` names the node in messages. A launch of one rank, or a device that
// is not a GPU ("cpu", or "auto" where there is no GPU), keeps `device`. "cuda" and "auto"
// take the GPU of the local rank; "cuda:N" is kept only where one rank runs on the node.
GpuAssignment assignGpu(const std::string& device, const LaunchEnvironment& launch, int gpuCount,
                        const std::string& whyNoGpu, const std::string& host);

// The same for this process: its launch (launchEnvironment), this machine's GPUs (listGpus,
// asked only when `device` is not "cpu") and its host name.
GpuAssignment assignGpuToThisRank(const std::string& device);

} // namespace mantissa
