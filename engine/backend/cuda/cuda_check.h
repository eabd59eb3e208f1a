#pragma once
// CUDA, cuBLAS and cuDNN status codes turned into Mantissa's errors. Out of device memory
// is a ResourceError a user can act on (smaller batch); anything else names the call that
// failed so that a bug report says where.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

namespace mantissa::cuda {

void checkCuda(cudaError_t status, const char* call);
void checkCublas(cublasStatus_t status, const char* call);
void checkCudnn(cudnnStatus_t status, const char* call);

// Whether `stream` is recording a graph (CudaBackend::captureGraph).
bool isCapturing(cudaStream_t stream);
// Throws UnsupportedError(what) when `stream` is recording a graph; `what` says which call
// cannot be part of one and why ("download cannot be captured: it waits for ..."). The
// exception ends the capture (captureGraph reports it as the reason) instead of letting the
// call invalidate the capture or wait on a stream that is not executing.
void refuseWhileCapturing(cudaStream_t stream, const char* what);

} // namespace mantissa::cuda
