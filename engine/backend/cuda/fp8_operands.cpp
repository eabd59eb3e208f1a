#include "engine/backend/cuda/fp8_operands.h"

namespace mantissa::cuda {

void Fp8Operands::note(const void* data, std::int64_t count, MiniFloat element)
{
    const std::lock_guard lock(m_mutex);
    m_entries[data] = {count, element};
}

std::optional<MiniFloat> Fp8Operands::find(const void* data, std::int64_t count) const
{
    const std::lock_guard lock(m_mutex);
    const auto it = m_entries.find(data);
    if (it == m_entries.end() || it->second.count != count)
        return std::nullopt;
    return it->second.element;
}

void Fp8Operands::forget(const void* data)
{
    const std::lock_guard lock(m_mutex);
    m_entries.erase(data);
}

} // namespace mantissa::cuda
