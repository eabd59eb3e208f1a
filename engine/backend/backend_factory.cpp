#include "engine/backend/backend_factory.h"

#include "engine/util/check.h"

namespace mantissa {

#ifdef MANTISSA_HAVE_CUDA
// Defined in backend/cuda/cuda_factory.cpp; return nullptr / nothing and a reason when no
// usable GPU is present.
std::unique_ptr<Backend> makeCudaBackend(int deviceIndex, const CudaOptions& options, std::string& whyNot);
GpuInventory listCudaDevices();
#endif

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
    if (auto gpu = makeCudaBackend(index, cuda, whyNot)) {
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
    return listCudaDevices();
#else
    return {{}, "this build has no CUDA backend"};
#endif
}

} // namespace mantissa
