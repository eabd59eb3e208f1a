// GEMM through cublasGemmEx (and attention's batches of them through
// cublasGemmStridedBatchedEx) with tensor-core semantics: fp16/bf16 inputs multiply on tensor
// cores and accumulate in fp32, C is rounded once to its own dtype. fp32 inputs run in true
// fp32 (CUBLAS_COMPUTE_32F) unless the run asked for TF32.
//
// Row-major to cuBLAS's column-major: a row-major matrix read column-major is its
// transpose, so C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T with the operands
// swapped and each transpose flag kept.
#include "engine/backend/cuda/cuda_backend.h"

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/fp8_gemm.h"
#include "engine/backend/cuda/kernels.h"
#include "engine/util/check.h"

#include <cuda_runtime_api.h>
#include <library_types.h>

namespace mantissa::cuda {

namespace {

cudaDataType_t cudaTypeOf(DType dtype)
{
    switch (dtype) {
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
    }
}

// cuBLAS multiplies 16-bit inputs into a 16-bit C of the same type or into fp32, and fp32
// inputs only into fp32; other pairs go through an fp32 C and a cast.
bool cublasWritesDirectly(DType inputs, DType output) { return output == DType::F32 || output == inputs; }

// cuBLAS takes its sizes, leading dimensions and batch count as int.
int asInt(std::int64_t v)
{
    MANTISSA_ASSERT(v >= 0 && v <= 0x7fffffff);
    return static_cast<int>(v);
}

} // namespace

void CudaBackend::gemm(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                       const Tensor& a, const Tensor& b, float beta, Tensor& c)
{
    MANTISSA_ASSERT(a.dtype() == b.dtype());
    MANTISSA_ASSERT(a.numel() == m * k && b.numel() == k * n && c.numel() == m * n);
    if (m == 0 || n == 0)
        return;
    // The per-tensor FP8 recipes' elements on FP8 tensor cores where the plan allows (fp8_gemm.h).
    if (m_fp8->tryGemm(ta, tb, m, n, k, alpha, a, b, beta, c))
        return;
    Tensor target = c;
    const bool direct = cublasWritesDirectly(a.dtype(), c.dtype());
    if (!direct) {
        target = empty(Shape{m, n}, DType::F32);
        if (beta != 0)
            cast(c, target); // the previous C read at its own precision, as the contract says
    }
    const cublasOperation_t opA = ta == Transpose::Yes ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t opB = tb == Transpose::Yes ? CUBLAS_OP_T : CUBLAS_OP_N;
    const auto lda = static_cast<int>(ta == Transpose::Yes ? m : k);
    const auto ldb = static_cast<int>(tb == Transpose::Yes ? k : n);
    const bool fp32Inputs = a.dtype() == DType::F32;
    const cublasComputeType_t compute =
        fp32Inputs && m_options.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    checkCublas(cublasGemmEx(m_cublas, opB, opA, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha,
                             b.data(), cudaTypeOf(b.dtype()), ldb, a.data(), cudaTypeOf(a.dtype()), lda, &beta,
                             target.data(), cudaTypeOf(target.dtype()), static_cast<int>(n), compute,
                             CUBLAS_GEMM_DEFAULT),
                "cublasGemmEx");
    if (!direct)
        cast(target, c);
}

// The same call per batch entry: C_i^T = op(B_i)^T op(A_i)^T with the strides unchanged. A C
// cuBLAS cannot write (fp32 inputs into a 16-bit C, or fp16 into bf16) is computed in an fp32
// copy of the whole of c, a round trip that is exact for the values between the batch entries.
void CudaBackend::gemmStridedBatched(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k,
                                     float alpha, const Tensor& a, std::int64_t strideA, const Tensor& b,
                                     std::int64_t strideB, float beta, Tensor& c, std::int64_t strideC,
                                     std::int64_t batch)
{
    MANTISSA_ASSERT(a.dtype() == b.dtype() && batch >= 1);
    MANTISSA_ASSERT(a.numel() >= (batch - 1) * strideA + m * k && b.numel() >= (batch - 1) * strideB + k * n);
    MANTISSA_ASSERT(c.numel() >= (batch - 1) * strideC + m * n);
    if (m == 0 || n == 0)
        return;
    Tensor target = c;
    const bool direct = cublasWritesDirectly(a.dtype(), c.dtype());
    if (!direct) {
        // Whatever beta: the copy goes back whole, so the values between the entries (strideC
        // beyond m * n) must make the round trip too.
        target = empty(c.shape(), DType::F32);
        cast(c, target);
    }
    const cublasOperation_t opA = ta == Transpose::Yes ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t opB = tb == Transpose::Yes ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int lda = asInt(ta == Transpose::Yes ? m : k);
    const int ldb = asInt(tb == Transpose::Yes ? k : n);
    const bool fp32Inputs = a.dtype() == DType::F32;
    const cublasComputeType_t compute =
        fp32Inputs && m_options.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    checkCublas(cublasGemmStridedBatchedEx(m_cublas, opB, opA, asInt(n), asInt(m), asInt(k), &alpha, b.data(),
                                           cudaTypeOf(b.dtype()), ldb, strideB, a.data(), cudaTypeOf(a.dtype()), lda,
                                           strideA, &beta, target.data(), cudaTypeOf(target.dtype()), asInt(n), strideC,
                                           asInt(batch), compute, CUBLAS_GEMM_DEFAULT),
                "cublasGemmStridedBatchedEx");
    if (!direct)
        cast(target, c);
}

// The bias must join the fp32 sum before C's one rounding (backend.h), and cublasGemmEx rounds
// into a 16-bit C itself. So a 16-bit C is computed as fp32 (which cuBLAS writes for 16-bit
// inputs too), the bias added there and the sum cast once, as conv2dForward does with a bias.
// cuBLASLt's CUBLASLT_EPILOGUE_BIAS would fuse the two passes, but it brings a second library,
// matmul descriptors and algorithm heuristics per shape (kept outside a graph capture, like
// conv_plans), and a rounding the CPU oracle can only match where it is documented; the extra
// pass here costs one fp32 [m, n] read and write, small beside the GEMM for a layer's sizes.
void CudaBackend::gemmRowBias(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k,
                              const Tensor& a, const Tensor& b, const Tensor& bias, Tensor& c, OperandScales scales,
                              bool relu)
{
    MANTISSA_ASSERT(bias.numel() == n && c.numel() == m * n);
    if (m == 0 || n == 0)
        return;
    Tensor wide = c.dtype() == DType::F32 ? c : empty(Shape{m, n}, DType::F32);
    // cuBLAS multiplies the fp32 sum by alpha before it is stored; the bias follows (backend.h).
    gemm(ta, tb, m, n, k, scales.product(), a, b, 0.0f, wide);
    launchAddRowBias(wide.data(), DType::F32, bias.data(), bias.dtype(), m, n, stream());
    checkLaunch("gemmRowBias");
    if (wide.dtype() != c.dtype())
        cast(wide, c);
    if (relu) // after the rounding, with the same bits (backend.h); a pass of its own here
        activationForward(Activation::Relu, c, c);
}

} // namespace mantissa::cuda
