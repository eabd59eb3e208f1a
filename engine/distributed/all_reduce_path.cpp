#include "engine/distributed/all_reduce_path.h"

#include "engine/backend/cuda_plugin_loader.h"
#include "engine/distributed/rank_agreement.h"

#include <vector>

namespace mantissa {

NcclSupport ncclSupport()
{
    NcclSupport support;
#ifdef MANTISSA_HAVE_CUDA
    const CudaPlugin& plugin = cudaPlugin();
    if (!plugin.api) {
        support.whyNot = plugin.whyNot;
        return support;
    }
    support.version = plugin.api->ncclVersion(support.whyNot);
#else
    support.whyNot = "this build has no CUDA backend, so no NCCL";
#endif
    return support;
}

AllReducePath chooseAllReducePath(DeviceKind backend, const NcclSupport& nccl, const std::string& hostDescription)
{
    const auto onHost = [&](const std::string& why) { return AllReducePath{false, hostDescription + ": " + why, why}; };
    if (backend != DeviceKind::Cuda)
        return onHost("the CPU backend's gradients are already in host memory");
    if (!nccl.available())
        return onHost("no NCCL, so the GPU's gradients go through host memory (" + nccl.whyNot + ")");
    return {true, nccl.version + " on device", {}};
}

AllReducePath connectAllReduce(DataParallel& ranks, Backend& backend)
{
    Communicator& comm = ranks.communicator();
    const std::string host = hostAllReduceDescription(comm);
    AllReducePath path = chooseAllReducePath(
        backend.device().kind, backend.device().kind == DeviceKind::Cuda ? ncclSupport() : NcclSupport{}, host);
    // Every rank on the device, or none: the lowest rank that cannot says why.
    try {
        failTogether(comm, path.onDevice ? std::string() : "rank " + std::to_string(comm.rank()) + ": " + path.whyHost);
    } catch (const DistributedError& e) {
        if (path.onDevice)
            path = {false, host + ": another rank cannot use NCCL (" + e.what() + ")", e.what()};
        ranks.useDeviceAllReduce(nullptr, path.description); // every rank takes the host path, and says why
        return path;
    }
#ifdef MANTISSA_HAVE_CUDA
    const CudaPluginApi& api = *cudaPlugin().api; // every rank chose NCCL: the plugin is loaded
    std::string id, whyNot;
    if (comm.rank() == 0)
        id = api.ncclUniqueId(whyNot);
    // An empty id tells the others that rank 0 could not make one; its reason follows.
    comm.broadcast(id, 0);
    if (id.empty()) {
        comm.broadcast(whyNot, 0);
        throw DistributedError("rank 0 could not start NCCL: " + whyNot);
    }
    auto device = api.makeNcclAllReduce(
        backend, id, comm.rank(), comm.size(), [&comm] { return comm.interruption(); }, whyNot);
    if (!device)
        throw ResourceError("rank " + std::to_string(comm.rank()) + " of " + std::to_string(comm.size()) +
                            " could not join the NCCL communicator: " + whyNot);
    path.description = device->description();
    ranks.useDeviceAllReduce(std::move(device), path.description);
#endif
    return path;
}

} // namespace mantissa
