#pragma once
// The communicator of this process's launch: nullptr for a plain single process (MPI is not
// even initialised then), the MPI communicator under mpirun or srun when this build has MPI,
// and a DistributedError naming the launcher when it has not.
#include "engine/distributed/communicator.h"

#include <memory>

namespace mantissa {

// Whether this build can train across processes (CMake found MPI).
bool distributedSupportBuiltIn();

// Call once, from the thread that will run every collective, before any other thread starts.
std::unique_ptr<Communicator> connectRanks();

} // namespace mantissa
