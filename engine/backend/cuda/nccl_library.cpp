#include "engine/backend/cuda/nccl_library.h"

#include <dlfcn.h>

namespace mantissa::cuda {

namespace {

struct Loaded {
    NcclLibrary library;
    std::string whyNot;
};

template <typename F>
bool bind(void* handle, const char* name, F& slot, std::string& whyNot)
{
    slot = reinterpret_cast<F>(dlsym(handle, name));
    if (!slot)
        whyNot = std::string("libnccl.so.2 has no ") + name + " (NCCL older than 2.14?)";
    return slot != nullptr;
}

Loaded load()
{
    Loaded loaded;
    // Kept open for the process's life (RTLD_NODELETE): communicators outlive any one call.
    void* handle = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!handle) {
        const char* error = dlerror();
        loaded.whyNot = std::string("NCCL cannot load: ") + (error ? error : "libnccl.so.2 not found") +
                        " (install NCCL: the nvidia-nccl package, or the CUDA toolkit's libnccl2)";
        return loaded;
    }
    NcclLibrary& l = loaded.library;
    const bool bound = bind(handle, "ncclGetVersion", l.getVersion, loaded.whyNot) &&
                       bind(handle, "ncclGetUniqueId", l.getUniqueId, loaded.whyNot) &&
                       bind(handle, "ncclCommInitRankConfig", l.commInitRankConfig, loaded.whyNot) &&
                       bind(handle, "ncclCommGetAsyncError", l.commGetAsyncError, loaded.whyNot) &&
                       bind(handle, "ncclCommFinalize", l.commFinalize, loaded.whyNot) &&
                       bind(handle, "ncclCommDestroy", l.commDestroy, loaded.whyNot) &&
                       bind(handle, "ncclCommAbort", l.commAbort, loaded.whyNot) &&
                       bind(handle, "ncclAllReduce", l.allReduce, loaded.whyNot) &&
                       bind(handle, "ncclGetErrorString", l.getErrorString, loaded.whyNot) &&
                       bind(handle, "ncclGetLastError", l.getLastError, loaded.whyNot);
    if (!bound)
        return loaded;
    int code = 0;
    if (l.getVersion(&code) != ncclSuccess) {
        loaded.whyNot = "ncclGetVersion failed";
        return loaded;
    }
    // NCCL_VERSION_CODE since 2.9: major * 10000 + minor * 100 + patch.
    l.version = "NCCL " + std::to_string(code / 10000) + "." + std::to_string(code % 10000 / 100) + "." +
                std::to_string(code % 100);
    return loaded;
}

} // namespace

const NcclLibrary* ncclLibrary(std::string& whyNot)
{
    static const Loaded loaded = load();
    if (loaded.library.version.empty()) {
        whyNot = loaded.whyNot;
        return nullptr;
    }
    return &loaded.library;
}

std::string ncclFailure(const NcclLibrary& nccl, ncclResult_t status, const char* call, ncclComm_t comm)
{
    std::string text = std::string(call) + " failed: " + nccl.getErrorString(status);
    const char* last = nccl.getLastError(comm);
    if (last && *last)
        text += " (" + std::string(last) + ")";
    return text;
}

} // namespace mantissa::cuda
