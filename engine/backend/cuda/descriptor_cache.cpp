#include "engine/backend/cuda/descriptor_cache.h"

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/device_memory.h"
#include "engine/backend/cuda/kernels.h"
#include "engine/util/check.h"

#include <string>

namespace mantissa::cuda {

DescriptorCache::DescriptorCache(std::shared_ptr<DeviceMemory> memory) : m_memory(std::move(memory)) {}

const void* DescriptorCache::find(const std::string& key, const void* host, std::size_t bytes, const char* what)
{
    MANTISSA_ASSERT(bytes > 0);
    const auto hit = m_entries.find(key);
    if (hit != m_entries.end()) {
        hit->second.lastUse = ++m_clock;
        return hit->second.buffer->data();
    }
    if (isCapturing(m_memory->stream()))
        throw UnsupportedError(std::string(what) +
                               " for a list of tensors first met during a capture cannot be captured: their device "
                               "copy would be memory allocated inside it; run the step once before capturing it, "
                               "with the same tensors");
    if (m_entries.size() >= kMaxEntries)
        evictOldest();
    const auto words = static_cast<std::int64_t>((bytes + 3) / 4);
    auto buffer = std::make_shared<const Tensor>(Shape{words}, DType::F32,
                                                 m_memory->allocate(static_cast<std::size_t>(words) * 4));
    launchWriteBytes(const_cast<void*>(buffer->data()), host, bytes, m_memory->stream());
    checkCuda(cudaGetLastError(), what);
    m_entries.emplace(key, Entry{buffer, ++m_clock});
    return buffer->data();
}

void DescriptorCache::evictOldest()
{
    auto oldest = m_entries.begin();
    for (auto it = m_entries.begin(); it != m_entries.end(); ++it)
        if (it->second.lastUse < oldest->second.lastUse)
            oldest = it;
    if (oldest != m_entries.end())
        m_entries.erase(oldest);
}

std::vector<std::shared_ptr<const Tensor>> DescriptorCache::entries() const
{
    std::vector<std::shared_ptr<const Tensor>> all;
    all.reserve(m_entries.size());
    for (const auto& [key, entry] : m_entries)
        all.push_back(entry.buffer);
    return all;
}

} // namespace mantissa::cuda
