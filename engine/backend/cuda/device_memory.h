#pragma once
// Device memory and the stream of one backend. Allocations come from CUDA's stream-ordered
// pool (cudaMallocAsync on the stream, with the pool told to keep what is freed), so that
// the buffers of one training step are recycled into the next without cudaMalloc's
// device-wide synchronisation. Live and peak bytes are counted: runs record the peak (fp16
// vs fp32 memory is one of the things users compare).
//
// Held by shared_ptr, and every Storage's deleter holds it too: a tensor that outlives its
// backend still frees on a live stream.
//
// Graph capture (CudaBackend::captureGraph) changes what allocate and free mean while the
// stream records: cudaMallocAsync and cudaFreeAsync become the graph's allocation and free
// nodes, so a temporary made and dropped inside the captured body is memory the graph owns
// and reuses at every replay. Two cases need help, and get it here:
//  - a buffer made before the capture and released during it: freeing it would free memory
//    the graph reads at every replay, so it is kept, and freed when the graph goes;
//  - a buffer made during a capture that produced no graph: its address never became
//    memory, so it is not freed at all.
// Counting: an allocation counts when the host code makes it, captured or not, so the peak
// over a capture is the peak of one eager step; replays allocate nothing through here (the
// graph reuses its own memory) and leave live and peak bytes alone.
#include "engine/tensor/tensor.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace mantissa::cuda {

class DeviceMemory : public std::enable_shared_from_this<DeviceMemory> {
public:
    // Makes `device` current on the calling thread and creates the stream.
    static std::shared_ptr<DeviceMemory> create(int device);
    ~DeviceMemory();
    DeviceMemory(const DeviceMemory&) = delete;
    DeviceMemory& operator=(const DeviceMemory&) = delete;

    int device() const { return m_device; }
    cudaStream_t stream() const { return m_stream; }

    // `bytes` of device memory, freed (stream-ordered) when the last Tensor using it goes.
    // Throws ResourceError naming the size asked for, what this backend holds and what the
    // device has left when it is out of memory.
    std::shared_ptr<Storage> allocate(std::size_t bytes);

    // Called with each buffer's address when its last Tensor goes (on whichever thread drops
    // it), before the memory returns to the pool: what the backend noted about a buffer's
    // contents (fp8_operands.h) must not outlive the buffer. Set once, before any allocation
    // that it concerns.
    void setReleaseListener(std::function<void(void*)> listener) { m_releaseListener = std::move(listener); }

    std::size_t liveBytes() const { return m_live.load(); }
    std::size_t peakBytes() const { return m_peak.load(); }
    void resetPeak() { m_peak = m_live.load(); }

    // Buffers a graph keeps alive; freed (stream-ordered) when the last holder goes.
    class Retained;
    // Called once the stream has begun capturing.
    void beginCapture();
    // Called once the stream has stopped capturing. Returns the buffers released during the
    // capture, which the graph must keep. `abandoned`: no graph came of the capture; what it
    // retained is freed now (null is returned) and what it allocated is never freed.
    std::shared_ptr<Retained> endCapture(bool abandoned);

private:
    explicit DeviceMemory(int device);
    struct Capture {
        bool abandoned = false;
    };
    // The deleter of every Storage: `made` is the capture that allocated it, or null.
    void release(void* data, std::size_t bytes, const std::shared_ptr<Capture>& made);
    void freeNow(void* data, std::size_t bytes);

    int m_device;
    cudaStream_t m_stream = nullptr;
    std::atomic<std::size_t> m_live{0};
    std::atomic<std::size_t> m_peak{0};
    std::mutex m_captureMutex;          // guards the two below; tensors die on any thread
    std::shared_ptr<Capture> m_capture; // the capture in progress, or null
    std::vector<std::pair<void*, std::size_t>> m_retained;
    std::function<void(void*)> m_releaseListener;
};

class DeviceMemory::Retained {
public:
    Retained(std::shared_ptr<DeviceMemory> memory, std::vector<std::pair<void*, std::size_t>> buffers)
        : m_memory(std::move(memory)), m_buffers(std::move(buffers))
    {}
    ~Retained();
    Retained(const Retained&) = delete;
    Retained& operator=(const Retained&) = delete;

private:
    std::shared_ptr<DeviceMemory> m_memory;
    std::vector<std::pair<void*, std::size_t>> m_buffers;
};

} // namespace mantissa::cuda
