#pragma once
// Whether this process was started as one rank of several (mpirun, srun), read from the
// variables the launchers set. Needs no MPI: a build without MPI uses it to refuse such a
// launch instead of training N independent copies that all believe they are the only one.
#include <string>

namespace mantissa {

struct LaunchEnvironment {
    int worldSize = 1; // ranks the launcher started; 1 when none did
    int rank = 0;
    std::string launcher; // "mpirun (OMPI_COMM_WORLD_SIZE=2)", "srun (...)"; empty when none
    // This rank among the ranks on its own machine (node), which picks its GPU; -1 and 0 when
    // the launcher does not say (localSource is then empty).
    int localRank = -1;
    int localSize = 0;
    std::string localSource; // "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", ...
    bool launched() const { return !launcher.empty(); }
};

LaunchEnvironment launchEnvironment();

// The tasks on node `node` from Slurm's compact per-node list ("2(x3),1": two tasks on each of
// the first three nodes, then one): SLURM_STEP_TASKS_PER_NODE indexed by SLURM_NODEID. 0 when
// the text does not parse or has no such node.
int slurmTasksOnNode(const std::string& tasksPerNode, int node);

} // namespace mantissa
