#include "engine/backend/cpu/float_view.h"

#include "engine/numerics/conversions.h"

namespace mantissa::cpu {

FloatInput::FloatInput(const Tensor& t) : m_size(static_cast<std::size_t>(t.numel()))
{
    if (t.dtype() == DType::F32) {
        m_data = t.f32();
        return;
    }
    m_scratch = allocateHostStorage(m_size * sizeof(float));
    m_data = static_cast<float*>(m_scratch->data);
    widenToFloat(t.data(), t.dtype(), static_cast<float*>(m_scratch->data), m_size);
}

FloatOutput::FloatOutput(Tensor& t, bool load) : m_tensor(t), m_size(static_cast<std::size_t>(t.numel()))
{
    if (t.dtype() == DType::F32) {
        m_data = t.f32();
        return;
    }
    m_scratch = allocateHostStorage(m_size * sizeof(float));
    m_data = static_cast<float*>(m_scratch->data);
    if (load)
        widenToFloat(t.data(), t.dtype(), m_data, m_size);
}

void FloatOutput::commit()
{
    if (m_tensor.dtype() != DType::F32)
        narrowFromFloat(m_data, m_tensor.data(), m_size, m_tensor.dtype());
}

} // namespace mantissa::cpu
