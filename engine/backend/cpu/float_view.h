#pragma once
// Helpers that let CPU kernels work in fp32 whatever a tensor's storage type:
// FloatInput widens a 16-bit tensor into scratch (fp32 tensors are used in place);
// FloatOutput hands out an fp32 buffer and rounds it into the tensor on commit();
// KernelInput is what a oneDNN GEMM or convolution reads.
#include "engine/tensor/tensor.h"

#include <memory>
#include <optional>

namespace mantissa::cpu {

class FloatInput {
public:
    explicit FloatInput(const Tensor& t);
    const float* data() const { return m_data; }
    std::size_t size() const { return m_size; }

private:
    std::shared_ptr<Storage> m_scratch;
    const float* m_data = nullptr;
    std::size_t m_size = 0;
};

class FloatOutput {
public:
    // With `load`, the buffer starts with the tensor's current values (for accumulation).
    FloatOutput(Tensor& t, bool load = false);
    float* data() { return m_data; }
    std::size_t size() const { return m_size; }
    // Rounds the fp32 results into the tensor's dtype (a no-op for fp32 tensors).
    void commit();

private:
    Tensor& m_tensor;
    std::shared_ptr<Storage> m_scratch;
    float* m_data = nullptr;
    std::size_t m_size = 0;
};

// The operand a oneDNN kernel reads: the tensor's own bf16 bits on the native path, else fp32
// (16-bit tensors widened into scratch, fp32 ones read in place).
class KernelInput {
public:
    KernelInput(const Tensor& t, bool native)
    {
        if (native)
            m_data = t.data();
        else
            m_data = m_widened.emplace(t).data();
    }
    const void* data() const { return m_data; }

private:
    std::optional<FloatInput> m_widened;
    const void* m_data = nullptr;
};

// The result a oneDNN kernel writes: where a native bf16 kernel writes a bf16 tensor, the
// tensor's own bits, which the kernel rounds its fp32 sums into; otherwise an fp32 buffer
// (FloatOutput) that commit() rounds into the tensor. `nativeKernel` is false also where the
// caller still has fp32 work to do on the result (a recipe's output scale).
class KernelOutput {
public:
    KernelOutput(Tensor& t, bool nativeKernel, bool load)
    {
        if (nativeKernel && t.dtype() == DType::BF16)
            m_data = t.data();
        else
            m_data = m_floats.emplace(t, load).data();
    }
    bool kernelRounds() const { return !m_floats; }
    void* data() { return m_data; }
    // The fp32 buffer, for a pass the kernel could not do; only without kernelRounds.
    float* floats() { return m_floats->data(); }
    void commit()
    {
        if (m_floats)
            m_floats->commit();
    }

private:
    std::optional<FloatOutput> m_floats;
    void* m_data = nullptr;
};

// The two inputs of a GEMM or convolution share a type, except that one may be fp32 beside a
// 16-bit one: a recipe's quantised operand is bf16 beside an fp32 one (gemm_inputs.h writes
// bf16 only where every value is a bf16), and Backend::widenedForGemms hands over a 16-bit
// operand already widened. Such a pair is multiplied in fp32, both widened exactly.
inline bool sameOrWidened(const Tensor& a, const Tensor& b)
{
    return a.dtype() == b.dtype() || a.dtype() == DType::F32 || b.dtype() == DType::F32;
}

} // namespace mantissa::cpu
