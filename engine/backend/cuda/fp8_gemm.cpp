// Fp8Matmul (fp8_gemm.h). Row-major to cuBLASLt's column-major as in cublas_gemm.cpp: C[m, n]
// = op(A) op(B) is computed as C^T = op(B)^T op(A)^T. Both operands are first packed into FP8
// codes with K contiguous, A as Ap [m, k] and B as Bp [n, k], whatever the GEMM's transpose
// flags; read column-major, Bp is a k x n matrix and Ap a k x m one, so C^T = Bp^T Ap is the
// "TN" product cuBLASLt's FP8 kernels require (A transposed, B not), with every leading
// dimension K.
#include "engine/backend/cuda/fp8_gemm.h"

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/device_memory.h"
#include "engine/backend/cuda/fp8_gemm_plan.h"
#include "engine/backend/cuda/fp8_operands.h"
#include "engine/backend/cuda/kernels.h"
#include "engine/util/check.h"

#include <library_types.h>

#include <cstdint>
#include <string>

namespace mantissa::cuda {

namespace {

cudaDataType_t fp8TypeOf(MiniFloat element) { return element == MiniFloat::E5M2 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3; }

// The descriptors of one call, destroyed with it (they are host objects, cheap to make).
struct LtCall {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulPreference_t preference = nullptr;
    LtCall() = default;
    LtCall(const LtCall&) = delete;
    LtCall& operator=(const LtCall&) = delete;
    ~LtCall()
    {
        if (preference)
            cublasLtMatmulPreferenceDestroy(preference);
        if (c)
            cublasLtMatrixLayoutDestroy(c);
        if (b)
            cublasLtMatrixLayoutDestroy(b);
        if (a)
            cublasLtMatrixLayoutDestroy(a);
        if (op)
            cublasLtMatmulDescDestroy(op);
    }
};

std::string smName(int major, int minor) { return "sm_" + std::to_string(major * 10 + minor); }

} // namespace

Fp8Matmul::Fp8Matmul(std::shared_ptr<DeviceMemory> memory, std::shared_ptr<Fp8Operands> operands, Fp8Gemm mode,
                     int major, int minor, void* workspace, std::size_t workspaceBytes)
    : m_memory(std::move(memory)), m_operands(std::move(operands)), m_mode(mode), m_major(major), m_minor(minor),
      m_workspace(workspace), m_workspaceBytes(workspaceBytes)
{
    if (enabled())
        checkCublas(cublasLtCreate(&m_handle), "cublasLtCreate");
}

Fp8Matmul::~Fp8Matmul()
{
    if (m_handle)
        cublasLtDestroy(m_handle);
}

bool Fp8Matmul::enabled() const { return m_mode != Fp8Gemm::Emulated && hasFp8TensorCores(m_major, m_minor); }

void Fp8Matmul::requireNativeIfAsked() const
{
    if (m_mode == Fp8Gemm::Native && !hasFp8TensorCores(m_major, m_minor))
        throw UnsupportedError("training.fp8_gemm is native, but this GPU (" + smName(m_major, m_minor) +
                               ") has no FP8 tensor cores (sm_89 or newer); use fp8_gemm auto or emulated");
}

bool Fp8Matmul::tryGemm(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                        const Tensor& a, const Tensor& b, float beta, Tensor& c)
{
    if (a.dtype() != DType::BF16 || b.dtype() != DType::BF16)
        return false;
    Fp8GemmRequest request{
        m_mode, m_major, m_minor,  m_operands->find(a.data(), a.numel()), m_operands->find(b.data(), b.numel()), m,
        n,      k,       c.dtype()};
    if (!request.a && !request.b)
        return false; // not a recipe's FP8 GEMM: nothing to count
    std::string refusal = fp8GemmRefusal(request);
    LtCall call;
    cublasLtMatmulHeuristicResult_t heuristic{};
    if (refusal.empty()) {
        const cudaDataType_t cType = c.dtype() == DType::BF16 ? CUDA_R_16BF : CUDA_R_32F;
        checkCublas(cublasLtMatmulDescCreate(&call.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
        const cublasOperation_t transposed = CUBLAS_OP_T, plain = CUBLAS_OP_N;
        checkCublas(
            cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_TRANSA, &transposed, sizeof transposed),
            "cublasLtMatmulDescSetAttribute(TRANSA)");
        checkCublas(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_TRANSB, &plain, sizeof plain),
                    "cublasLtMatmulDescSetAttribute(TRANSB)");
        // Off is cuBLASLt's default, set so that it cannot change under us: fast accumulation
        // keeps Hopper's FP8 partial sums in the tensor core's narrower accumulator, which
        // the emulation (and the recipes' "fp32 accumulation") does not.
        const std::int8_t fastAccumulation = 0;
        checkCublas(cublasLtMatmulDescSetAttribute(call.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fastAccumulation,
                                                   sizeof fastAccumulation),
                    "cublasLtMatmulDescSetAttribute(FAST_ACCUM)");
        const auto u = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
        checkCublas(cublasLtMatrixLayoutCreate(&call.a, fp8TypeOf(*request.b), u(k), u(n), k),
                    "cublasLtMatrixLayoutCreate(A)");
        checkCublas(cublasLtMatrixLayoutCreate(&call.b, fp8TypeOf(*request.a), u(k), u(m), k),
                    "cublasLtMatrixLayoutCreate(B)");
        checkCublas(cublasLtMatrixLayoutCreate(&call.c, cType, u(n), u(m), n), "cublasLtMatrixLayoutCreate(C)");
        checkCublas(cublasLtMatmulPreferenceCreate(&call.preference), "cublasLtMatmulPreferenceCreate");
        checkCublas(cublasLtMatmulPreferenceSetAttribute(call.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                         &m_workspaceBytes, sizeof m_workspaceBytes),
                    "cublasLtMatmulPreferenceSetAttribute");
        int found = 0;
        const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(m_handle, call.op, call.a, call.b, call.c, call.c,
                                                                     call.preference, 1, &heuristic, &found);
        if (status != CUBLAS_STATUS_SUCCESS || found == 0)
            refusal = std::string("cuBLASLt offers no FP8 algorithm for this GEMM (") +
                      (status == CUBLAS_STATUS_SUCCESS ? "none found" : cublasGetStatusString(status)) + ")";
    }
    if (!refusal.empty()) {
        ++m_emulated[refusal];
        return false;
    }
    // The packed operands are freed stream-ordered when they go out of scope here, after the
    // matmul queued below has read them.
    const std::shared_ptr<Storage> packedA = m_memory->allocate(static_cast<std::size_t>(m * k));
    const std::shared_ptr<Storage> packedB = m_memory->allocate(static_cast<std::size_t>(n * k));
    auto* ap = static_cast<std::uint8_t*>(packedA->data);
    auto* bp = static_cast<std::uint8_t*>(packedB->data);
    const cudaStream_t stream = m_memory->stream();
    launchPackFp8(static_cast<const std::uint16_t*>(a.data()), ap, m, k, ta == Transpose::Yes,
                  *request.a == MiniFloat::E5M2, stream);
    launchPackFp8(static_cast<const std::uint16_t*>(b.data()), bp, n, k, tb == Transpose::No,
                  *request.b == MiniFloat::E5M2, stream);
    checkCuda(cudaGetLastError(), "packing FP8 operands");
    checkCublas(cublasLtMatmul(m_handle, call.op, &alpha, bp, call.a, ap, call.b, &beta, c.data(), call.c, c.data(),
                               call.c, &heuristic.algo, m_workspace, m_workspaceBytes, stream),
                "cublasLtMatmul (FP8)");
    ++m_native;
    return true;
}

std::string Fp8Matmul::paths() const
{
    std::string text = "fp8 matmul: ";
    if (m_mode == Fp8Gemm::Emulated)
        text += "emulated (training.fp8_gemm is emulated): FP8 elements multiplied as bf16 by cuBLAS";
    else if (!hasFp8TensorCores(m_major, m_minor))
        text += "emulated (" + smName(m_major, m_minor) +
                " has no FP8 tensor cores): FP8 elements multiplied as "
                "bf16 by cuBLAS";
    else
        text += "cuBLASLt FP8 (" + smName(m_major, m_minor) +
                ") where a GEMM allows it (M, N, K multiples of 16, not E5M2 x E5M2), else emulated";
    if (m_native == 0 && m_emulated.empty())
        return text;
    text += "\nfp8 GEMMs so far: " + std::to_string(m_native) + " on cuBLASLt FP8";
    for (const auto& [reason, count] : m_emulated)
        text += ", " + std::to_string(count) + " emulated (" + reason + ")";
    return text;
}

} // namespace mantissa::cuda
