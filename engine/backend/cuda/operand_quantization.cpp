// CudaBackend::quantizeOperand: the sub-16-bit recipes' operand quantisation on the device
// (quantize_operand.cu). Per-tensor scaling reads the operand's amax back, since its decode
// scale is the GEMM's alpha on the host and the delayed-scaling history is kept there too; the
// block formats run without a host round trip. Per-tensor FP8 elements written as bf16 are
// noted (fp8_operands.h), so that the GEMM may multiply them on FP8 tensor cores (fp8_gemm.h).
#include "engine/backend/cuda/cuda_backend.h"

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/fp8_gemm.h"
#include "engine/backend/cuda/fp8_operands.h"
#include "engine/backend/cuda/kernels.h"
#include "engine/numerics/operand_quantization.h"
#include "engine/util/check.h"

#include <cstring>
#include <string>

namespace mantissa::cuda {

QuantizedOperand CudaBackend::quantizeOperand(const Tensor& src, const OperandQuantization& q)
{
    if (src.dtype() != DType::F32 && src.dtype() != DType::BF16)
        throw UnsupportedError("quantizeOperand: the CUDA backend quantises fp32 or bf16 operands, not " +
                               std::string(dtypeName(src.dtype())));
    Tensor dst = empty(src.shape(), q.elements ? DType::BF16 : DType::F32);
    const std::int64_t n = src.numel();
    MANTISSA_ASSERT(dst.numel() == n && q.view.rows() * q.view.cols() == n);
    const bool perTensor = q.format.scheme == ScalingScheme::PerTensor && !q.tiled;
    m_fp8Operands->forget(dst.data()); // rewritten: what it held before is gone
    QuantizedOperand result{dst};
    if (!perTensor) {
        qa::OperandPlan plan = operandPlan(q, 0.0f); // validates; NVFP4's tensor level follows on the device
        Tensor amax;
        if (needsTensorAmax(q)) {
            amax = empty(Shape{1}, DType::F32);
            launchFiniteAmax(src.data(), src.dtype(), n, static_cast<unsigned*>(amax.data()), stream());
        }
        launchQuantizeBlocks(src.data(), src.dtype(), dst.data(), dst.dtype(), plan, q.view, q.grid,
                             amax.data() ? static_cast<const unsigned*>(amax.data()) : nullptr, stream());
        checkLaunch("quantizeOperand");
        return result;
    }
    refuseWhileCapturing(stream(), "quantizeOperand cannot be captured: a per-tensor scale goes to the host");
    const bool fp8Elements = q.elements && dst.dtype() == DType::BF16 &&
                             (q.format.element == MiniFloat::E4M3 || q.format.element == MiniFloat::E5M2);
    if (fp8Elements)
        m_fp8->requireNativeIfAsked();
    Tensor amax = empty(Shape{1}, DType::F32);
    launchFiniteAmax(src.data(), src.dtype(), n, static_cast<unsigned*>(amax.data()), stream());
    checkLaunch("quantizeOperand amax");
    unsigned bits = 0;
    std::memcpy(&bits, fetch(amax.data(), sizeof bits, "quantizeOperand amax"), sizeof bits);
    result.amax = qa::floatOf(bits);
    const qa::OperandPlan plan = operandPlan(q, result.amax);
    launchQuantizeTensor(src.data(), src.dtype(), dst.data(), dst.dtype(), n, plan, stream());
    checkLaunch("quantizeOperand");
    result.decodeScale = q.elements ? plan.tensorPlan.scale : 1.0f;
    if (fp8Elements)
        m_fp8Operands->note(dst.data(), n, q.format.element);
    return result;
}

} // namespace mantissa::cuda
