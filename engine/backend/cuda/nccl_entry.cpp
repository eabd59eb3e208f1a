// The NCCL entry points of a plugin built without nccl.h: they say so, and a data-parallel
// run all-reduces through MPI on the host. With nccl.h, nccl_all_reduce.cpp defines them.
#include "engine/backend/cuda/nccl_all_reduce.h"

#ifndef MANTISSA_HAVE_NCCL

namespace mantissa::cuda {

namespace {

constexpr const char* kNoNccl = "this build's CUDA backend has no NCCL (nccl.h was not found when it was configured: "
                                "set NCCL_ROOT, or MANTISSA_WITH_NCCL was OFF)";

} // namespace

std::string ncclVersionText(std::string& whyNot)
{
    whyNot = kNoNccl;
    return {};
}

std::string makeNcclUniqueId(std::string& whyNot)
{
    whyNot = kNoNccl;
    return {};
}

std::unique_ptr<DeviceAllReduce> makeNcclAllReduce(Backend&, const std::string&, int, int, std::function<std::string()>,
                                                   std::string& whyNot)
{
    whyNot = kNoNccl;
    return nullptr;
}

} // namespace mantissa::cuda

#endif
