#include "engine/backend/cuda/device_memory.h"

#include "engine/backend/cuda/cuda_check.h"
#include "engine/util/check.h"

#include <cstdint>
#include <string>

namespace mantissa::cuda {

namespace {

std::string mib(std::size_t bytes)
{
    return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB";
}

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
    storage->release = [self = shared_from_this(), bytes](void* p) {
        cudaFreeAsync(p, self->m_stream);
        self->m_live -= bytes;
    };
    return storage;
}

} // namespace mantissa::cuda
