#pragma once
// Device copies of the descriptor arrays the multi-tensor kernels read (kernels.h: TensorRef,
// SlotRef), one persistent buffer per distinct array, looked up by content.
//
// Why not one buffer rewritten before each launch: a training run passes the same parameter
// lists every step, so after the first step every lookup here is a hit and nothing is copied
// at all; and a graph captured from the step needs each of its arrays at a fixed address
// holding the same bytes at every replay, which a shared buffer would hold only for the last
// array written. A miss uploads through kernel arguments (launchWriteBytes): nothing waits
// and no pageable memory is copied from. A miss while the stream records a graph throws: the
// buffer would be persistent memory allocated inside the capture.
//
// The least recently used entries beyond kMaxEntries are dropped (freed stream-ordered, so
// after the kernels already queued that read them); a graph holds the entries that existed
// when it was captured (entries()), so dropping never pulls an array from under a graph.
#include "engine/tensor/tensor.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace mantissa::cuda {

class DeviceMemory;

class DescriptorCache {
public:
    static constexpr std::size_t kMaxEntries = 128;

    explicit DescriptorCache(std::shared_ptr<DeviceMemory> memory);

    // A device array holding `bytes` bytes copied from `host`, whose content `key` identifies
    // (the fields of the descriptors, without struct padding). `what` names the array in the
    // error a miss during a capture throws.
    const void* find(const std::string& key, const void* host, std::size_t bytes, const char* what);

    // Every entry, for a graph to hold.
    std::vector<std::shared_ptr<const Tensor>> entries() const;

    std::size_t size() const { return m_entries.size(); }

private:
    struct Entry {
        std::shared_ptr<const Tensor> buffer;
        std::uint64_t lastUse = 0;
    };
    void evictOldest();

    std::shared_ptr<DeviceMemory> m_memory;
    std::unordered_map<std::string, Entry> m_entries;
    std::uint64_t m_clock = 0;
};

} // namespace mantissa::cuda
