#include "engine/backend/backend_factory.h"

#include "engine/backend/cuda_plugin_loader.h"
#include "engine/util/check.h"

namespace mantissa {

bool cudaBackendBuilt()
{
#ifdef MANTISSA_HAVE_CUDA
    return true;
#else
    return false;
#endif
}

BackendSelection selectBackend(const std::string& device, const CpuOptions& cpu, const CudaOptions& cuda)
{
    if (device == "cpu")
        return {makeCpuBackend(cpu), "training on the CPU as requested"};
    const bool wantsCuda = device.rfind("cuda", 0) == 0;
    if (device != "auto" && !wantsCuda)
        throw ConfigError("training.device is \"" + device + "\"; expected auto, cpu, cuda or cuda:N");
    int index = 0;
    if (wantsCuda && device.size() > 4) {
        if (device[4] != ':')
            throw ConfigError("training.device is \"" + device + "\"; expected cuda or cuda:N");
        try {
            index = std::stoi(device.substr(5));
        } catch (const std::exception&) {
            throw ConfigError("training.device is \"" + device + "\"; the GPU index after 'cuda:' is not a number");
        }
    }
    std::string whyNot;
#ifdef MANTISSA_HAVE_CUDA
    // The CUDA backend is a plugin (cuda_plugin_loader.h): loaded on first use, and its
    // absence, or a CUDA library it cannot find, is the reason the GPU is unavailable.
    if (const CudaPlugin& plugin = cudaPlugin(); !plugin.api) {
        whyNot = plugin.whyNot;
    } else if (auto gpu = plugin.api->makeBackend(index, cuda, whyNot)) {
        std::string reason = "training on " + gpu->name();
        return {std::move(gpu), std::move(reason)};
    }
#else
    (void)index;
    (void)cuda;
    whyNot = "this build has no CUDA backend (configured with MANTISSA_WITH_CUDA=OFF or without a CUDA toolkit)";
#endif
    if (wantsCuda)
        throw ResourceError("cannot train on " + device + ": " + whyNot);
    return {makeCpuBackend(cpu), whyNot + "; training on the CPU"};
}

} // namespace mantissa

namespace mantissa {

GpuInventory listGpus()
{
#ifdef MANTISSA_HAVE_CUDA
    const CudaPlugin& plugin = cudaPlugin();
    if (!plugin.api)
        return {{}, plugin.whyNot};
    return plugin.api->listDevices();
#else
    return {{}, "this build has no CUDA backend"};
#endif
}

} // namespace mantissa
