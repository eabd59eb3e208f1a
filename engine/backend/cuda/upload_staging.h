#pragma once
// Host-to-device uploads through pinned memory. A copy from pageable memory makes the driver
// stage it through a bounce buffer of its own, in pieces, on the calling thread; from pinned
// memory the DMA engine reads the source directly and the call returns at once. The values
// are written (narrowed to the tensor's dtype on the way) into a pinned block, the copy is
// queued behind the work already on the stream and marked by an event, and the block returns
// to the pool once that event has passed, so a trainer running a step ahead can upload the
// next batch while the device is still busy with the current one.
#include "engine/backend/cuda/host_read.h"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>

namespace mantissa::cuda {

class UploadStaging {
public:
    explicit UploadStaging(std::shared_ptr<PinnedPool> pool) : m_pool(std::move(pool)) {}
    ~UploadStaging();
    UploadStaging(const UploadStaging&) = delete;
    UploadStaging& operator=(const UploadStaging&) = delete;

    // Has `fill` write `bytes` into a pinned block, then queues their copy to `dst` on `stream`.
    void upload(void* dst, std::size_t bytes, const std::function<void(void* block)>& fill, cudaStream_t stream);

private:
    struct InFlight {
        std::pair<void*, std::size_t> block;
        cudaEvent_t done;
    };
    // Returns the blocks whose copies have finished (in queue order) to the pool.
    void reclaim();

    std::shared_ptr<PinnedPool> m_pool;
    std::deque<InFlight> m_inFlight;
};

} // namespace mantissa::cuda
