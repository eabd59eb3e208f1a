#pragma once
// Backend::readAsync on the GPU: a device-to-host copy into pinned memory, queued on the
// backend's stream behind the work that writes the values and marked by an event, so that
// the host waits only when it needs them (the trainer reads each step's record while the
// next step runs). Pinned blocks are reused: page-locked allocation is slow and serialises
// the device, so it happens only until every read a run keeps in flight has had a block.
#include <cstddef>
#include <mutex>
#include <utility>
#include <vector>

namespace mantissa::cuda {

class PinnedPool {
public:
    PinnedPool() = default;
    ~PinnedPool();
    PinnedPool(const PinnedPool&) = delete;
    PinnedPool& operator=(const PinnedPool&) = delete;

    // A pinned block of at least `bytes`, until give() returns it.
    std::pair<void*, std::size_t> take(std::size_t bytes);
    void give(std::pair<void*, std::size_t> block);

private:
    std::mutex m_mutex; // reads may be finished on another thread than the one that started them
    std::vector<std::pair<void*, std::size_t>> m_free;
};

} // namespace mantissa::cuda
