#include "engine/backend/cuda/cuda_check.h"

#include "engine/util/check.h"

#include <string>

namespace mantissa::cuda {

void checkCuda(cudaError_t status, const char* call)
{
    if (status == cudaSuccess)
        return;
    cudaGetLastError(); // clear the sticky-free error so later calls report their own
    const std::string what = std::string(call) + ": " + cudaGetErrorString(status);
    if (status == cudaErrorMemoryAllocation)
        throw ResourceError("out of device memory in " + what);
    throw Error("CUDA error in " + what);
}

void checkCublas(cublasStatus_t status, const char* call)
{
    if (status == CUBLAS_STATUS_SUCCESS)
        return;
    const std::string what = std::string(call) + ": " + cublasGetStatusString(status);
    if (status == CUBLAS_STATUS_ALLOC_FAILED)
        throw ResourceError("out of device memory in " + what);
    if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_ARCH_MISMATCH)
        throw UnsupportedError("cuBLAS cannot do " + what);
    throw Error("cuBLAS error in " + what);
}

void checkCudnn(cudnnStatus_t status, const char* call)
{
    if (status == CUDNN_STATUS_SUCCESS)
        return;
    const std::string what = std::string(call) + ": " + cudnnGetErrorString(status);
    if (status == CUDNN_STATUS_ALLOC_FAILED)
        throw ResourceError("out of device memory in " + what);
    throw Error("cuDNN error in " + what);
}

bool isCapturing(cudaStream_t stream)
{
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    checkCuda(cudaStreamIsCapturing(stream, &status), "cudaStreamIsCapturing");
    // An invalidated capture is still one: the stream leaves it only at cudaStreamEndCapture.
    return status != cudaStreamCaptureStatusNone;
}

void refuseWhileCapturing(cudaStream_t stream, const char* what)
{
    if (isCapturing(stream))
        throw UnsupportedError(what);
}

} // namespace mantissa::cuda
