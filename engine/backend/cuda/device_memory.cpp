#include "engine/backend/cuda/device_memory.h"

#include "engine/backend/cuda/cuda_check.h"
#include "engine/util/check.h"

#include <cstdint>
#include <string>

namespace mantissa::cuda {

namespace {

std::string mib(std::size_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

} // namespace

std::shared_ptr<DeviceMemory> DeviceMemory::create(int device)
{
    return std::shared_ptr<DeviceMemory>(new DeviceMemory(device));
}

DeviceMemory::DeviceMemory(int device) : m_device(device)
{
    checkCuda(cudaSetDevice(device), "cudaSetDevice");
    checkCuda(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    // Keep freed memory in the pool instead of returning it to the driver at every
    // synchronisation: a training step frees and reallocates the same sizes each time.
    cudaMemPool_t pool = nullptr;
    checkCuda(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
    std::uint64_t keep = UINT64_MAX;
    checkCuda(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
}

DeviceMemory::~DeviceMemory()
{
    // Destructors must not throw; a failing sync here means the device is already lost.
    cudaStreamSynchronize(m_stream);
    cudaStreamDestroy(m_stream);
}

std::shared_ptr<Storage> DeviceMemory::allocate(std::size_t bytes)
{
    auto storage = std::make_shared<Storage>();
    storage->bytes = bytes;
    storage->device = {DeviceKind::Cuda, m_device};
    if (bytes == 0)
        return storage;
    void* data = nullptr;
    const cudaError_t status = cudaMallocAsync(&data, bytes, m_stream);
    if (status == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        std::size_t freeBytes = 0, totalBytes = 0;
        cudaMemGetInfo(&freeBytes, &totalBytes);
        throw ResourceError("out of GPU memory on cuda:" + std::to_string(m_device) + ": asked for " + mib(bytes) +
                            " with " + mib(m_live.load()) + " already held by this run (" + mib(freeBytes) +
                            " free of " + mib(totalBytes) + ")");
    }
    checkCuda(status, "cudaMallocAsync");
    storage->data = data;
    const std::size_t live = m_live += bytes;
    std::size_t peak = m_peak.load();
    while (live > peak && !m_peak.compare_exchange_weak(peak, live)) {}
    std::shared_ptr<Capture> made;
    {
        const std::lock_guard lock(m_captureMutex);
        made = m_capture;
    }
    storage->release = [self = shared_from_this(), bytes, made](void* p) { self->release(p, bytes, made); };
    return storage;
}

void DeviceMemory::release(void* data, std::size_t bytes, const std::shared_ptr<Capture>& made)
{
    if (m_releaseListener)
        m_releaseListener(data);
    {
        const std::lock_guard lock(m_captureMutex);
        if (made && made->abandoned) {
            // A graph allocation of a capture that made no graph: there is nothing to free.
            m_live -= bytes;
            return;
        }
        if (m_capture && made != m_capture) {
            // Made outside this capture: the graph may read it at every replay.
            m_retained.emplace_back(data, bytes);
            return;
        }
    }
    freeNow(data, bytes);
}

void DeviceMemory::freeNow(void* data, std::size_t bytes)
{
    // Stream-ordered: after every kernel queued before that may still read it. Under capture
    // this is the graph's free node. A destructor cannot throw, and a failure here (the
    // device is lost) would otherwise be reported by the next, unrelated, launch check.
    if (cudaFreeAsync(data, m_stream) != cudaSuccess)
        cudaGetLastError();
    m_live -= bytes;
}

void DeviceMemory::beginCapture()
{
    const std::lock_guard lock(m_captureMutex);
    m_capture = std::make_shared<Capture>();
    m_retained.clear();
}

std::shared_ptr<DeviceMemory::Retained> DeviceMemory::endCapture(bool abandoned)
{
    std::vector<std::pair<void*, std::size_t>> retained;
    {
        const std::lock_guard lock(m_captureMutex);
        if (m_capture)
            m_capture->abandoned = abandoned;
        m_capture.reset();
        retained.swap(m_retained);
    }
    auto held = std::make_shared<Retained>(shared_from_this(), std::move(retained));
    if (abandoned)
        held.reset(); // no graph will read them: freed here
    return held;
}

DeviceMemory::Retained::~Retained()
{
    // Through release, not free: should another capture be recording by now, it keeps them.
    for (const auto& [data, bytes] : m_buffers)
        m_memory->release(data, bytes, nullptr);
}

} // namespace mantissa::cuda
