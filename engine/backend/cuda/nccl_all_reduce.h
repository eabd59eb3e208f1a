#pragma once
// The plugin's NCCL entry points (backend/cuda_plugin_api.h): the on-device gradient
// all-reduce of data-parallel runs. In a plugin built without nccl.h they answer why there is
// none (nccl_entry.cpp); with it, NcclAllReduce (nccl_all_reduce.cpp) sums the packed
// gradients with ncclAllReduce on the backend's stream, between the division kernels
// (all_reduce_kernels.cu) that give it the host path's rounding points.
#include "engine/backend/backend.h"
#include "engine/backend/device_all_reduce.h"

#include <functional>
#include <memory>
#include <string>

namespace mantissa::cuda {

std::string ncclVersionText(std::string& whyNot);
std::string makeNcclUniqueId(std::string& whyNot);
std::unique_ptr<DeviceAllReduce> makeNcclAllReduce(Backend& backend, const std::string& uniqueId, int rank, int size,
                                                   std::function<std::string()> interruption, std::string& whyNot);

} // namespace mantissa::cuda
