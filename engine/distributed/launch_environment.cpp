#include "engine/distributed/launch_environment.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
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

// A non-negative integer from the environment, or -1.
int indexVariable(const char* name)
{
    const char* value = std::getenv(name);
    if (!value || !*value)
        return -1;
    char* end = nullptr;
    const long n = std::strtol(value, &end, 10);
    return (*end == '\0' && n >= 0 && n < 1 << 24) ? static_cast<int>(n) : -1;
}

// Where this rank sits on its node: Open MPI's mpirun, MPICH's and Intel MPI's Hydra, srun.
void readLocalRank(LaunchEnvironment& env)
{
    struct Source {
        const char* rank;
        const char* size;
    };
    constexpr Source kSources[] = {
        {"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
        {"MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    };
    for (const Source& s : kSources) {
        if (const int rank = indexVariable(s.rank); rank >= 0) {
            env.localRank = rank;
            env.localSize = positiveVariable(s.size);
            env.localSource = s.rank;
            return;
        }
    }
    if (const int rank = indexVariable("SLURM_LOCALID"); rank >= 0) {
        env.localRank = rank;
        const char* perNode = std::getenv("SLURM_STEP_TASKS_PER_NODE");
        env.localSize = perNode ? slurmTasksOnNode(perNode, std::max(indexVariable("SLURM_NODEID"), 0)) : 0;
        env.localSource = "SLURM_LOCALID";
    }
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
            readLocalRank(env);
            return env;
        }
    }
    return env;
}

int slurmTasksOnNode(const std::string& tasksPerNode, int node)
{
    std::size_t at = 0;
    while (at < tasksPerNode.size()) {
        std::size_t used = 0;
        int tasks = 0, repeat = 1;
        try {
            tasks = std::stoi(tasksPerNode.substr(at), &used);
        } catch (const std::exception&) {
            return 0;
        }
        at += used;
        if (tasksPerNode.compare(at, 2, "(x") == 0) {
            try {
                repeat = std::stoi(tasksPerNode.substr(at + 2), &used);
            } catch (const std::exception&) {
                return 0;
            }
            at += 2 + used;
            if (at >= tasksPerNode.size() || tasksPerNode[at] != ')')
                return 0;
            ++at;
        }
        if (tasks <= 0 || repeat <= 0)
            return 0;
        if (node < repeat)
            return tasks;
        node -= repeat;
        if (at < tasksPerNode.size() && tasksPerNode[at++] != ',')
            return 0;
    }
    return 0;
}

} // namespace mantissa
