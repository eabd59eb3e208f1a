#include "engine/distributed/launch_environment.h"

#include <cstdlib>
#include <string>

namespace mantissa {

namespace {

// A positive integer from the environment, or 0.
int positiveVariable(const char* name)
{
    const char* value = std::getenv(name);
    if (!value || !*value)
        return 0;
    char* end = nullptr;
    const long n = std::strtol(value, &end, 10);
    return (*end == '\0' && n > 0 && n < 1 << 24) ? static_cast<int>(n) : 0;
}

int variable(const char* name)
{
    const char* value = std::getenv(name);
    return value ? std::atoi(value) : 0;
}

} // namespace

LaunchEnvironment launchEnvironment()
{
    // Open MPI's mpirun (and srun with Open MPI's PMIx), MPICH and Intel MPI's PMI, Slurm's
    // srun; the first that is set names the launch.
    struct Source {
        const char* size;
        const char* rank;
        const char* launcher;
    };
    constexpr Source kSources[] = {
        {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "mpirun"},
        {"PMI_SIZE", "PMI_RANK", "a PMI launcher"},
        {"PMIX_SIZE", "PMIX_RANK", "a PMIx launcher"},
        {"SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "srun"},
    };
    LaunchEnvironment env;
    for (const Source& s : kSources) {
        if (const int size = positiveVariable(s.size)) {
            env.worldSize = size;
            env.rank = variable(s.rank);
            env.launcher = std::string(s.launcher) + " (" + s.size + "=" + std::to_string(size) + ")";
            return env;
        }
    }
    return env;
}

} // namespace mantissa
