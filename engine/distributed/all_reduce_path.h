#pragma once
// Where a data-parallel run sums its gradients: NCCL on the device when the backend is CUDA
// and the CUDA plugin has NCCL, else MPI on the host (download, sum, upload). The choice is
// the same on every rank (a rank summing through NCCL while another waits in MPI would hang
// both), and the run's record says which and why (DataParallel::allReducePath).
#include "engine/backend/backend.h"
#include "engine/distributed/data_parallel.h"

#include <string>

namespace mantissa {

// What the CUDA plugin says about NCCL: its version, or why there is none.
struct NcclSupport {
    std::string version; // "NCCL 2.28.9"; empty when unavailable
    std::string whyNot;  // "this build's CUDA backend has no NCCL (...)", "libnccl.so.2: cannot open ..."
    bool available() const { return !version.empty(); }
};

// Asks the plugin (loading it and, in it, libnccl); never throws.
NcclSupport ncclSupport();

struct AllReducePath {
    bool onDevice = false;
    std::string description; // "NCCL 2.28.9 on device", "MPI on host (Open MPI v4.1.4): <why>"
    std::string whyHost;     // why not on the device; empty when onDevice
};

// This rank's choice alone: NCCL where the backend is a GPU and NCCL is available.
AllReducePath chooseAllReducePath(DeviceKind backend, const NcclSupport& nccl, const std::string& hostDescription);

// Collective, after the backends are made: chooses on every rank, takes the host path on every
// rank when any rank cannot use NCCL (naming that rank and its reason), else bootstraps NCCL
// (rank 0's ncclUniqueId broadcast through `ranks`' communicator) and hands it to `ranks`.
// Returns the path taken. A failure inside NCCL's set-up throws ResourceError on the rank it
// happened on (the caller ends the job: the others may be waiting inside NCCL).
AllReducePath connectAllReduce(DataParallel& ranks, Backend& backend);

} // namespace mantissa
