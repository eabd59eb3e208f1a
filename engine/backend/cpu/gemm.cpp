// Tensor-core semantics on the CPU: inputs are already in the compute type (16-bit
// tensors hold exactly representable values), products accumulate in fp32, and the result
// is rounded once to C's storage type (by FloatOutput::commit, or by a native bf16 kernel
// writing a bf16 C itself: KernelOutput). bf16 inputs go to oneDNN as
// they are where the plan says native (the CPU multiplies bf16 pairs into fp32); otherwise,
// and for fp16, they are widened exactly to fp32 first (the emulated path, the oracle).
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_view.h"
#include "engine/backend/cpu/onednn_matmul.h"
#include "engine/backend/cpu/output_scale.h"
#include "engine/util/check.h"

namespace mantissa {

void CpuBackend::gemm(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                      const Tensor& a, const Tensor& b, float beta, Tensor& c)
{
    MANTISSA_ASSERT(a.numel() >= m * k && b.numel() >= k * n && c.numel() >= m * n);
    MANTISSA_ASSERT(cpu::sameOrWidened(a, b));
    const bool native = a.dtype() == DType::BF16 && b.dtype() == DType::BF16 && m_plan.nativeBf16;
    const cpu::KernelInput fa(a, native);
    const cpu::KernelInput fb(b, native);
    // Without beta, alpha is applied to the fp32 sums here rather than built into the cached
    // primitive: a recipe's alpha (OperandScales) changes every step (output_scale.h).
    const float kernelAlpha = beta == 0.0f ? 1.0f : alpha;
    cpu::KernelOutput fc(c, native && kernelAlpha == alpha, beta != 0.0f);
    cpu::MatmulShape shape{ta, tb, m, n, k, native, false, kernelAlpha, beta};
    shape.bf16Output = fc.kernelRounds();
    m_matmul->run(shape, fa.data(), fb.data(), nullptr, fc.data());
    if (kernelAlpha != alpha)
        cpu::scaleOutput(fc.floats(), static_cast<std::size_t>(m * n), alpha);
    fc.commit();
}

void CpuBackend::gemmRowBias(Transpose ta, Transpose tb, std::int64_t m, std::int64_t n, std::int64_t k,
                             const Tensor& a, const Tensor& b, const Tensor& bias, Tensor& c, OperandScales scales,
                             bool relu)
{
    MANTISSA_ASSERT(a.numel() >= m * k && b.numel() >= k * n && c.numel() >= m * n && bias.numel() == n);
    MANTISSA_ASSERT(cpu::sameOrWidened(a, b));
    const bool native = a.dtype() == DType::BF16 && b.dtype() == DType::BF16 && m_plan.nativeBf16;
    const cpu::KernelInput fa(a, native);
    const cpu::KernelInput fb(b, native);
    cpu::FloatInput fbias(bias);
    // The bias joins the fp32 sum of products inside the kernel, before the one rounding (by the
    // kernel or by commit(); backend.h), as cuBLASLt's epilogue does; with operand scales the
    // sum is scaled first, so the bias joins it afterwards (output_scale.h).
    cpu::KernelOutput fc(c, native && scales.unit(), false);
    if (scales.unit()) {
        cpu::MatmulShape shape{ta, tb, m, n, k, native, true, 1.0f, 0.0f};
        shape.bf16Output = fc.kernelRounds();
        shape.relu = relu;
        m_matmul->run(shape, fa.data(), fb.data(), fbias.data(), fc.data());
    } else {
        m_matmul->run({ta, tb, m, n, k, native, false, 1.0f, 0.0f}, fa.data(), fb.data(), nullptr, fc.data());
        cpu::scaleRowsAddBias(fc.floats(), m, n, scales.product(), fbias.data());
        if (relu)
            cpu::reluInPlace(fc.floats(), static_cast<std::size_t>(m * n));
    }
    fc.commit();
}

} // namespace mantissa
