// Capturing a training step as a CUDA graph (Backend::captureGraph): the body runs once with
// the backend's stream recording instead of executing, and the graph it leaves is replayed
// with one cudaGraphLaunch per step, on the same tensors.
//
// What makes a body capturable is arranged elsewhere and checked while it runs: persistent
// buffers (reduction results, cuBLAS's workspace) exist from the backend's construction;
// descriptor arrays come from DescriptorCache, whose misses throw during a capture; cuDNN's
// algorithm search refuses to run in one (conv_plans.cpp); calls that return a value to the
// host throw (refuseWhileCapturing); temporaries become the graph's own allocations
// (device_memory.h). Any of those errors, an exception from the body or a failed CUDA call
// ends the capture, frees what it made and comes back as the reason, with the stream no
// longer recording and the backend usable as before.
#include "engine/backend/cuda/cuda_backend.h"

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/descriptor_cache.h"
#include "engine/backend/cuda/device_memory.h"

#include <exception>
#include <string>
#include <utility>
#include <vector>

namespace mantissa::cuda {

namespace {

class CudaStepGraph final : public StepGraph {
public:
    CudaStepGraph(cudaGraph_t graph, cudaGraphExec_t exec, std::shared_ptr<DeviceMemory> memory,
                  std::vector<std::shared_ptr<const void>> kept)
        : m_graph(graph), m_exec(exec), m_memory(std::move(memory)), m_kept(std::move(kept))
    {}

    ~CudaStepGraph() override
    {
        // A replay still running finishes first (CUDA frees an executing graph on completion);
        // the buffers it reads are then freed stream-ordered, after it, as m_kept goes.
        cudaGraphExecDestroy(m_exec);
        cudaGraphDestroy(m_graph);
    }

    CudaStepGraph(const CudaStepGraph&) = delete;
    CudaStepGraph& operator=(const CudaStepGraph&) = delete;

    void replay() override { checkCuda(cudaGraphLaunch(m_exec, m_memory->stream()), "cudaGraphLaunch"); }

private:
    cudaGraph_t m_graph;
    cudaGraphExec_t m_exec;
    std::shared_ptr<DeviceMemory> m_memory;
    // Device memory the recorded work reads or writes at every replay and that the graph
    // does not own: descriptor arrays, the reductions' results, cuBLAS's workspace, and
    // buffers released during the capture (DeviceMemory::Retained).
    std::vector<std::shared_ptr<const void>> m_kept;
};

std::string cudaFailure(const char* call, cudaError_t status)
{
    cudaGetLastError(); // not sticky: clear it so later launch checks report their own
    return std::string(call) + ": " + cudaGetErrorString(status);
}

} // namespace

std::unique_ptr<StepGraph> CudaBackend::captureGraph(const std::function<void(Backend&)>& body, std::string* why)
{
    const auto refuse = [why](const std::string& reason) -> std::unique_ptr<StepGraph> {
        if (why)
            *why = "CUDA graph capture failed: " + reason;
        return nullptr;
    };
    if (isCapturing(stream()))
        return refuse("this backend's stream is already recording a graph");
    // An error left by earlier work would otherwise be blamed on the capture.
    if (const cudaError_t pending = cudaGetLastError(); pending != cudaSuccess)
        return refuse(std::string("an earlier CUDA call failed: ") + cudaGetErrorString(pending));

    // Thread-local mode: this thread may not make calls that are unsafe during a capture
    // (cudaMalloc, synchronisation); other threads' CUDA work is left alone.
    if (const cudaError_t status = cudaStreamBeginCapture(stream(), cudaStreamCaptureModeThreadLocal);
        status != cudaSuccess)
        return refuse(cudaFailure("cudaStreamBeginCapture", status));
    m_memory->beginCapture();
    std::string failure;
    try {
        body(*this);
    } catch (const std::exception& e) {
        failure = e.what();
    } catch (...) {
        failure = "the body threw an exception that is not a std::exception";
    }
    cudaGraph_t graph = nullptr;
    if (const cudaError_t status = cudaStreamEndCapture(stream(), &graph); status != cudaSuccess) {
        const std::string ended = cudaFailure("cudaStreamEndCapture", status);
        if (failure.empty())
            failure = ended + " (a call in the body is not allowed during a capture)";
        graph = nullptr;
    }
    cudaGraphExec_t exec = nullptr;
    if (failure.empty()) {
        // AutoFreeOnLaunch: a tensor made in the body and kept after it is a graph allocation
        // that each replay makes again at the same address; without the flag a second launch
        // would fail while the first one's allocation is still held.
        if (const cudaError_t status =
                cudaGraphInstantiateWithFlags(&exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch);
            status != cudaSuccess) {
            failure = cudaFailure("cudaGraphInstantiateWithFlags", status);
            exec = nullptr;
        }
    }
    std::shared_ptr<DeviceMemory::Retained> retained = m_memory->endCapture(!failure.empty());
    if (!failure.empty()) {
        if (graph)
            cudaGraphDestroy(graph);
        return refuse(failure);
    }
    std::vector<std::shared_ptr<const void>> kept;
    for (std::shared_ptr<const Tensor>& entry : m_descriptors->entries())
        kept.push_back(std::move(entry));
    kept.push_back(std::make_shared<const Tensor>(m_results));
    kept.push_back(std::make_shared<const Tensor>(m_cublasWorkspace));
    kept.push_back(std::move(retained));
    return std::make_unique<CudaStepGraph>(graph, exec, m_memory, std::move(kept));
}

} // namespace mantissa::cuda
