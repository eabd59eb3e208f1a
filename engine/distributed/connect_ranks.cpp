#include "engine/distributed/connect_ranks.h"

#ifdef MANTISSA_HAVE_MPI
#include "engine/distributed/mpi_communicator.h"
#endif

namespace mantissa {

bool distributedSupportBuiltIn()
{
#ifdef MANTISSA_HAVE_MPI
    return true;
#else
    return false;
#endif
}

std::unique_ptr<Communicator> connectRanks()
{
    const LaunchEnvironment env = launchEnvironment();
    if (!env.launched())
        return nullptr;
#ifdef MANTISSA_HAVE_MPI
    return std::make_unique<MpiCommunicator>();
#else
    refuseLaunchWithoutMpi(env);
    return nullptr; // one rank is one process: nothing to share with
#endif
}

void refuseLaunchWithoutMpi(const LaunchEnvironment& env)
{
    if (!env.launched() || env.worldSize == 1)
        return;
    throw DistributedError("started as rank " + std::to_string(env.rank) + " of " + std::to_string(env.worldSize) +
                           " by " + env.launcher +
                           ", but this build has no MPI support, so every rank would train its own copy; "
                           "rebuild with Open MPI installed (Debian: libopenmpi-dev, see scripts/setup) or "
                           "run a single process");
}

} // namespace mantissa
