#include "engine/distributed/gpu_assignment.h"

#include "engine/backend/backend_factory.h"

#include <unistd.h>

#include <cstring>

namespace mantissa {

namespace {

std::string gpus(int count)
{
    if (count == 1)
        return "1 GPU (cuda:0)";
    return std::to_string(count) + " GPUs (cuda:0 to cuda:" + std::to_string(count - 1) + ")";
}

} // namespace

GpuAssignment assignGpu(const std::string& device, const LaunchEnvironment& launch, int gpuCount,
                        const std::string& whyNoGpu, const std::string& host)
{
    const bool wantsCuda = device.rfind("cuda", 0) == 0;
    if (launch.worldSize <= 1 || device == "cpu" || (device == "auto" && gpuCount == 0))
        return {device, {}};
    const std::string rank = "rank " + std::to_string(launch.rank) + " of " + std::to_string(launch.worldSize);
    const std::string asked = "training.device " + device;
    if (gpuCount == 0) // only a GPU was asked for here
        return {device, "cannot train on " + device + " on " + host + ": " + whyNoGpu};
    if (wantsCuda && device != "cuda") {
        // One GPU named for every rank: several ranks on one GPU would each hold the whole
        // model and NCCL refuses two ranks on one device.
        if (launch.localSize == 1)
            return {device, {}};
        return {device,
                asked + " names one GPU, but " +
                    (launch.localSize > 1 ? std::to_string(launch.localSize) + " ranks run"
                                          : std::string("several ranks may run")) +
                    " on " + host +
                    "; use cuda (each rank takes the GPU of its place on the node) or launch one rank per node"};
    }
    if (launch.localRank < 0)
        return {device, rank + " cannot tell which GPU of " + host +
                            " is its own: the launcher set none of OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or "
                            "SLURM_LOCALID; launch with mpirun or srun, or set training.device to cuda:N with one "
                            "rank per node"};
    const int ranksHere = launch.localSize > 0 ? launch.localSize : launch.localRank + 1;
    if (ranksHere > gpuCount)
        return {device, std::string(launch.localSize > 0 ? "" : "at least ") + std::to_string(ranksHere) +
                            " ranks on " + host + " ask for a GPU each (" + asked + ", one rank per GPU), but " + host +
                            " has " + gpus(gpuCount) + "; launch at most " + std::to_string(gpuCount) +
                            " ranks per node (mpirun --map-by ppr:" + std::to_string(gpuCount) +
                            ":node, srun --ntasks-per-node=" + std::to_string(gpuCount) +
                            ") or train on the CPU (--device cpu)"};
    return {"cuda:" + std::to_string(launch.localRank), {}};
}

GpuAssignment assignGpuToThisRank(const std::string& device)
{
    const LaunchEnvironment launch = launchEnvironment();
    if (launch.worldSize <= 1 || device == "cpu")
        return {device, {}};
    const GpuInventory gpus = listGpus();
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0)
        std::strcpy(host, "this node");
    return assignGpu(device, launch, static_cast<int>(gpus.devices.size()), gpus.whyNone, host);
}

} // namespace mantissa
