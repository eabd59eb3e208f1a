#include "engine/backend/cuda/upload_staging.h"

#include "engine/backend/cuda/cuda_check.h"

namespace mantissa::cuda {

UploadStaging::~UploadStaging()
{
    for (InFlight& f : m_inFlight) {
        cudaEventSynchronize(f.done);
        cudaEventDestroy(f.done);
        m_pool->give(f.block);
    }
}

void UploadStaging::reclaim()
{
    // Copies on one stream finish in the order they were queued.
    while (!m_inFlight.empty()) {
        const cudaError_t state = cudaEventQuery(m_inFlight.front().done);
        if (state == cudaErrorNotReady) {
            // Not an error, but the runtime keeps it as the last one, where the next
            // launch check (cudaGetLastError) would take it for a failed launch.
            (void)cudaGetLastError();
            return;
        }
        checkCuda(state, "upload (a staged copy)");
        cudaEventDestroy(m_inFlight.front().done);
        m_pool->give(m_inFlight.front().block);
        m_inFlight.pop_front();
    }
}

void UploadStaging::upload(void* dst, std::size_t bytes, const std::function<void(void* block)>& fill,
                           cudaStream_t stream)
{
    reclaim();
    InFlight f{m_pool->take(bytes), nullptr};
    try {
        fill(f.block.first);
        checkCuda(cudaEventCreateWithFlags(&f.done, cudaEventDisableTiming), "cudaEventCreateWithFlags (upload)");
        checkCuda(cudaMemcpyAsync(dst, f.block.first, bytes, cudaMemcpyHostToDevice, stream), "upload");
        checkCuda(cudaEventRecord(f.done, stream), "cudaEventRecord (upload)");
    } catch (...) {
        // The block may still be read by a copy that was queued: wait before reusing it.
        if (f.done) {
            cudaStreamSynchronize(stream);
            cudaEventDestroy(f.done);
        }
        m_pool->give(f.block);
        throw;
    }
    m_inFlight.push_back(f);
}

} // namespace mantissa::cuda
