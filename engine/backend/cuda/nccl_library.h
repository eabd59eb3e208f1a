#pragma once
// NCCL, opened with dlopen on first use rather than linked: the CUDA backend then loads and
// trains on one GPU where libnccl.so.2 is missing, and the missing library becomes the reason
// a data-parallel run all-reduces through MPI on the host (distributed/all_reduce_path.h).
// Built only where nccl.h was found (MANTISSA_HAVE_NCCL); its types come from that header.
#include <nccl.h>

#include <string>

namespace mantissa::cuda {

struct NcclLibrary {
    decltype(&ncclGetVersion) getVersion = nullptr;
    decltype(&ncclGetUniqueId) getUniqueId = nullptr;
    decltype(&ncclCommInitRankConfig) commInitRankConfig = nullptr;
    decltype(&ncclCommGetAsyncError) commGetAsyncError = nullptr;
    decltype(&ncclCommFinalize) commFinalize = nullptr;
    decltype(&ncclCommDestroy) commDestroy = nullptr;
    decltype(&ncclCommAbort) commAbort = nullptr;
    decltype(&ncclAllReduce) allReduce = nullptr;
    decltype(&ncclGetErrorString) getErrorString = nullptr;
    decltype(&ncclGetLastError) getLastError = nullptr;
    std::string version; // "NCCL 2.28.9", from the library loaded (not the header)
};

// The library, loaded once per process (thread-safe); null with whyNot saying which file or
// symbol failed.
const NcclLibrary* ncclLibrary(std::string& whyNot);

// "ncclAllReduce failed: unhandled cuda error (... NCCL's last error ...)".
std::string ncclFailure(const NcclLibrary& nccl, ncclResult_t status, const char* call, ncclComm_t comm = nullptr);

} // namespace mantissa::cuda
