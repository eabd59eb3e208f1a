// Finding a usable GPU, and saying precisely why there is none: the message a user sees
// when `auto` falls back to the CPU or `cuda:N` is refused. Also the plugin's entry point
// (backend/cuda_plugin_api.h), through which the backend factory reaches both.
#include "engine/backend/backend_factory.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/nccl_all_reduce.h"
#include "engine/backend/cuda_plugin_api.h"
#include "engine/util/check.h"

#include <cuda_runtime_api.h>

namespace mantissa {

namespace {

// The number of GPUs, or 0 and why there are none.
int countDevices(std::string& whyNone)
{
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    cudaGetLastError();
    switch (status) {
    case cudaSuccess:
        if (count == 0)
            whyNone = "no CUDA GPU found";
        return count;
    case cudaErrorNoDevice: whyNone = "no CUDA GPU found"; return 0;
    case cudaErrorInsufficientDriver: {
        int runtime = 0;
        cudaRuntimeGetVersion(&runtime);
        whyNone = "no CUDA driver found, or it is older than this build's CUDA " + std::to_string(runtime / 1000) +
                  "." + std::to_string(runtime % 1000 / 10) + " runtime";
        return 0;
    }
    default: whyNone = std::string("CUDA is not usable: ") + cudaGetErrorString(status); return 0;
    }
}

std::unique_ptr<Backend> makeCudaBackend(int deviceIndex, const CudaOptions& options, std::string& whyNot)
{
    const int count = countDevices(whyNot);
    if (count == 0)
        return nullptr;
    if (deviceIndex < 0 || deviceIndex >= count) {
        whyNot = "there is no cuda:" + std::to_string(deviceIndex) + " (this machine has " + std::to_string(count) +
                 (count == 1 ? " GPU, cuda:0)" : " GPUs, cuda:0 to cuda:" + std::to_string(count - 1) + ")");
        return nullptr;
    }
    try {
        return std::make_unique<cuda::CudaBackend>(deviceIndex, options);
    } catch (const Error& e) {
        whyNot = std::string("cuda:") + std::to_string(deviceIndex) + " cannot be used: " + e.what();
        return nullptr;
    }
}

GpuInventory listCudaDevices()
{
    GpuInventory inventory;
    const int count = countDevices(inventory.whyNone);
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
            cudaGetLastError();
            continue;
        }
        inventory.devices.push_back({i, prop.name, prop.totalGlobalMem, prop.major, prop.minor});
    }
    if (count > 0 && inventory.devices.empty())
        inventory.whyNone = "the CUDA driver reports GPUs but none could be queried";
    return inventory;
}

} // namespace

} // namespace mantissa

// The only symbol the plugin exports (cuda_plugin.map).
extern "C" const mantissa::CudaPluginApi* mantissa_cuda_plugin_api()
{
    static const mantissa::CudaPluginApi api{mantissa::kCudaPluginAbi,          MANTISSA_VERSION,
                                             &mantissa::makeCudaBackend,        &mantissa::listCudaDevices,
                                             &mantissa::cuda::ncclVersionText,  &mantissa::cuda::makeNcclUniqueId,
                                             &mantissa::cuda::makeNcclAllReduce};
    return &api;
}
