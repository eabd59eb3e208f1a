#include "engine/backend/cuda/host_read.h"

#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/util/check.h"

#include <algorithm>

namespace mantissa::cuda {

PinnedPool::~PinnedPool()
{
    for (const auto& [block, bytes] : m_free)
        cudaFreeHost(block);
}

std::pair<void*, std::size_t> PinnedPool::take(std::size_t bytes)
{
    {
        const std::lock_guard lock(m_mutex);
        auto best = m_free.end();
        for (auto it = m_free.begin(); it != m_free.end(); ++it)
            if (it->second >= bytes && (best == m_free.end() || it->second < best->second))
                best = it;
        if (best != m_free.end()) {
            const auto block = *best;
            m_free.erase(best);
            return block;
        }
    }
    const std::size_t rounded = std::max<std::size_t>(256, (bytes + 255) / 256 * 256);
    void* block = nullptr;
    checkCuda(cudaMallocHost(&block, rounded), "cudaMallocHost (pinned staging for reads and uploads)");
    return {block, rounded};
}

void PinnedPool::give(std::pair<void*, std::size_t> block)
{
    const std::lock_guard lock(m_mutex);
    m_free.push_back(block);
}

namespace {

class CudaHostRead final : public HostRead {
public:
    CudaHostRead(std::shared_ptr<PinnedPool> pool, std::size_t bytes) : m_pool(std::move(pool))
    {
        checkCuda(cudaEventCreateWithFlags(&m_event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
        try {
            m_block = m_pool->take(bytes);
        } catch (...) {
            cudaEventDestroy(m_event);
            throw;
        }
    }

    ~CudaHostRead() override
    {
        // The block goes back to the pool only once the copy into it has landed.
        if (!m_done)
            cudaEventSynchronize(m_event);
        cudaEventDestroy(m_event);
        m_pool->give(m_block);
    }

    CudaHostRead(const CudaHostRead&) = delete;
    CudaHostRead& operator=(const CudaHostRead&) = delete;

    void start(const void* src, std::size_t bytes, cudaStream_t stream)
    {
        checkCuda(cudaMemcpyAsync(m_block.first, src, bytes, cudaMemcpyDeviceToHost, stream), "readAsync");
        checkCuda(cudaEventRecord(m_event, stream), "cudaEventRecord (readAsync)");
    }

    const float* wait() override
    {
        if (!m_done) {
            checkCuda(cudaEventSynchronize(m_event), "readAsync (waiting for the copy)");
            m_done = true;
        }
        return static_cast<const float*>(m_block.first);
    }

private:
    std::shared_ptr<PinnedPool> m_pool;
    std::pair<void*, std::size_t> m_block{nullptr, 0};
    cudaEvent_t m_event = nullptr;
    bool m_done = false;
};

} // namespace

std::unique_ptr<HostRead> CudaBackend::readAsync(const Tensor& src)
{
    MANTISSA_ASSERT(src.dtype() == DType::F32);
    refuseWhileCapturing(stream(), "readAsync cannot be captured: it copies the values to the host; read the "
                                   "step's record after replaying the graph");
    auto read = std::make_unique<CudaHostRead>(m_readBuffers, src.bytes());
    read->start(src.data(), src.bytes(), stream());
    return read;
}

} // namespace mantissa::cuda
