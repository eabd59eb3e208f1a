#pragma once
// Device memory and the stream of one backend. Allocations come from CUDA's stream-ordered
// pool (cudaMallocAsync on the stream, with the pool told to keep what is freed), so that
// the buffers of one training step are recycled into the next without cudaMalloc's
// device-wide synchronisation. Live and peak bytes are counted: runs record the peak (fp16
// vs fp32 memory is one of the things users compare).
//
// Held by shared_ptr, and every Storage's deleter holds it too: a tensor that outlives its
// backend still frees on a live stream.
#include "engine/tensor/tensor.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <memory>

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

    std::size_t liveBytes() const { return m_live.load(); }
    std::size_t peakBytes() const { return m_peak.load(); }
    void resetPeak() { m_peak = m_live.load(); }

private:
    explicit DeviceMemory(int device);

    int m_device;
    cudaStream_t m_stream = nullptr;
    std::atomic<std::size_t> m_live{0};
    std::atomic<std::size_t> m_peak{0};
};

} // namespace mantissa::cuda
