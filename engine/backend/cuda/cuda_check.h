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

} // namespace mantissa::cuda
