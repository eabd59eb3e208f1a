#pragma once
// The per-tensor FP8 recipes' GEMMs on FP8 tensor cores (Ada, Hopper): cuBLASLt's FP8 matmul
// over the 8-bit codes of the elements quantizeOperand wrote (fp8_operands.h), fp32 compute,
// a bf16 or fp32 output. CudaBackend::gemm asks it first; where the plan refuses
// (fp8_gemm_plan.h) the GEMM runs emulated, as before, and the reason is counted for the
// backend's kernel paths.
//
// The arithmetic is the emulated GEMM's up to the order of summation: the elements are the
// same numbers (the packed codes decode to them exactly), every product of two FP8 values is
// exact in fp32, the sums are fp32 (CUBLAS_COMPUTE_32F, fast accumulation off), and the sum is
// multiplied once by alpha, the product of the two decode scales the caller passes, before
// beta * C and the one rounding to C's type. The decode scales go in as alpha rather than as
// cuBLASLt's A/B scale pointers: the backend contract hands the GEMM their product, which the
// emulated path multiplies by too, and one multiplication by the same fp32 number is one
// rounding on both paths (scale pointers would be device memory read per call, and
// cuBLASLt's order of applying three factors is not documented).
#include "engine/backend/backend.h"
#include "engine/backend/cuda_options.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace mantissa::cuda {

class DeviceMemory;
class Fp8Operands;

class Fp8Matmul {
public:
    // `workspace` (`workspaceBytes`) is shared with cuBLAS: both run on the one stream.
    Fp8Matmul(std::shared_ptr<DeviceMemory> memory, std::shared_ptr<Fp8Operands> operands, Fp8Gemm mode, int major,
              int minor, void* workspace, std::size_t workspaceBytes);
    ~Fp8Matmul();
    Fp8Matmul(const Fp8Matmul&) = delete;
    Fp8Matmul& operator=(const Fp8Matmul&) = delete;

    // Whether FP8 GEMMs may run natively on this device under this mode (the plan may still
    // refuse a GEMM for its shape or operand pair).
    bool enabled() const;
    // Throws UnsupportedError when training.fp8_gemm is native and this device cannot honour it.
    void requireNativeIfAsked() const;
    // C = alpha op(A) op(B) + beta C (backend.h's gemm) on FP8 tensor cores when a and b hold
    // noted FP8 elements and the plan allows it; false, with nothing queued, otherwise. GEMMs
    // whose operands are not FP8 elements at all are not counted.
    bool tryGemm(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                 const Tensor& a, const Tensor& b, float beta, Tensor& c);
    // "fp8 matmul: cuBLASLt FP8 on sm_90 ..." and, once FP8 GEMMs have run, how many took
    // each path and why (Backend::kernelPaths).
    std::string paths() const;

private:
    std::shared_ptr<DeviceMemory> m_memory;
    std::shared_ptr<Fp8Operands> m_operands;
    Fp8Gemm m_mode;
    int m_major, m_minor;
    void* m_workspace;
    std::size_t m_workspaceBytes;
    cublasLtHandle_t m_handle = nullptr;
    std::int64_t m_native = 0;
    std::map<std::string, std::int64_t> m_emulated; // reason -> GEMMs
};

} // namespace mantissa::cuda
