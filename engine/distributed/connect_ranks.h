#pragma once
// The communicator of this process's launch: nullptr for a plain single process (MPI is not
// even initialised then), the MPI communicator under mpirun or srun when this build has MPI,
// and a DistributedError naming the launcher when it has not.
#include "engine/distributed/communicator.h"
#include "engine/distributed/launch_environment.h"

#include <memory>

namespace mantissa {

// Whether this build can train across processes (CMake found MPI).
bool distributedSupportBuiltIn();

// Call once, from the thread that will run every collective, before any other thread starts.
std::unique_ptr<Communicator> connectRanks();

// What a build without MPI does with a launch: nothing for a plain process or a launch of one
// rank; a DistributedError naming the launcher for several ranks. Compiled into every build
// (connectRanks calls it where MPI is missing), so that a test can check the refusal in a build
// that has MPI too.
void refuseLaunchWithoutMpi(const LaunchEnvironment& env);

} // namespace mantissa
