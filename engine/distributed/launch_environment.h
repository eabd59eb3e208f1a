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
    bool launched() const { return !launcher.empty(); }
};

LaunchEnvironment launchEnvironment();

} // namespace mantissa
