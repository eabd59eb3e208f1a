// NcclAllReduce: the gradients of one all-reduce packed into one device buffer, divided,
// summed by ncclAllReduce and divided again on the CUDA backend's stream, then unpacked.
//
// The divisions are our own kernels (all_reduce_kernels.cu), not ncclPreMulSum: PreMulSum
// multiplies by a scalar of the buffer's type, so 1/N and 1/sqrt(N) would be rounded to fp16
// or bf16 (and for N = 3 even fp32's 1/3 times x is not x / 3), while the host path divides
// in fp32 and rounds once to the type. The same rounding points keep the two paths' bits equal
// (nccl_all_reduce_test) and the flush count means the same thing in both.
//
// The sum itself is NCCL's: ncclSum in fp32, or in fp16/bf16 with each addition rounded to the
// type (as the host's rounded_sum). NCCL's order of additions (ring or tree) is not rank order,
// so from 3 ranks on the sum may differ from the host path's in the last bit; every rank still
// gets the same bits. With 1 or 2 ranks the sums are equal (a + b is commutative).
//
// The communicator is non-blocking (ncclConfig_t::blocking = 0), so every wait polls: for
// NCCL's asynchronous error, for the stream, and for the engine's interruption (the launcher
// ending the job after a rank died), and gives up instead of hanging.
#include "engine/backend/cuda/nccl_all_reduce.h"

#include "engine/backend/cuda/all_reduce_kernels.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/nccl_library.h"
#include "engine/util/check.h"

#include <array>
#include <cstring>
#include <thread>

namespace mantissa::cuda {

namespace {

ncclDataType_t ncclTypeOf(DType type)
{
    switch (type) {
    case DType::F16: return ncclFloat16;
    case DType::BF16: return ncclBfloat16;
    default: return ncclFloat32;
    }
}

class NcclAllReduce final : public DeviceAllReduce {
public:
    NcclAllReduce(CudaBackend& backend, const NcclLibrary& nccl, ncclComm_t comm,
                  std::function<std::string()> interruption)
        : m_backend(backend), m_nccl(nccl), m_comm(comm), m_interruption(std::move(interruption))
    {
        checkCuda(cudaMalloc(&m_counters, sizeof(AllReduceCounters)), "cudaMalloc (all-reduce counters)");
        checkCuda(cudaMallocHost(&m_hostCounters, sizeof(AllReduceCounters)), "cudaMallocHost (all-reduce counters)");
    }

    ~NcclAllReduce() override
    {
        if (m_broken) {
            m_nccl.commAbort(m_comm); // a peer may be gone: a clean finalize would wait for it
        } else {
            // Finalize flushes NCCL's outstanding work; a non-blocking communicator finishes it
            // asynchronously, so wait (giving up on an interruption) before destroying.
            if (m_nccl.commFinalize(m_comm) == ncclInProgress) {
                try {
                    waitForComm("ncclCommFinalize");
                } catch (const Error&) {
                    // Destroying anyway: a destructor cannot report, and the run already ended.
                }
            }
            m_nccl.commDestroy(m_comm);
        }
        cudaFree(m_counters);
        cudaFreeHost(m_hostCounters);
    }

    NcclAllReduce(const NcclAllReduce&) = delete;
    NcclAllReduce& operator=(const NcclAllReduce&) = delete;

    std::string description() const override { return m_nccl.version + " on device"; }

    AllReduceOutcome average(std::span<Tensor* const> tensors, DType type, AllReduceDivisors divisors) override
    {
        if (m_broken)
            throw ResourceError("the NCCL communicator failed earlier and cannot be used again");
        std::int64_t total = 0;
        for (const Tensor* t : tensors) {
            MANTISSA_ASSERT(t->dtype() == type);
            total += t->numel();
        }
        if (total == 0)
            return {};
        const cudaStream_t stream = m_backend.stream();
        Tensor& flat = m_flat[static_cast<std::size_t>(type == DType::F32 ? 0 : type == DType::F16 ? 1 : 2)];
        if (flat.numel() != total)
            flat = m_backend.empty(Shape({total}), type);
        char* packed = static_cast<char*>(flat.data());
        copyBetween(tensors, packed, true);
        checkCuda(cudaMemsetAsync(m_counters, 0, sizeof(AllReduceCounters), stream), "cudaMemsetAsync");
        const bool is16Bit = type != DType::F32;
        launchScanFinite(packed, type, total, &m_counters->nonFiniteBefore, nullptr, stream);
        if (divisors.before != 1.0f)
            launchDivideRounded(packed, type, total, divisors.before, is16Bit ? &m_counters->flushed : nullptr, stream);
        const ncclResult_t status = m_nccl.allReduce(packed, packed, static_cast<std::size_t>(total), ncclTypeOf(type),
                                                     ncclSum, m_comm, stream);
        if (status != ncclSuccess && status != ncclInProgress)
            fail(ncclFailure(m_nccl, status, "ncclAllReduce", m_comm));
        if (status == ncclInProgress)
            waitForComm("ncclAllReduce"); // enqueued once the communicator is no longer in progress
        if (divisors.after != 1.0f)
            launchDivideRounded(packed, type, total, divisors.after, nullptr, stream);
        // Dividing by a divisor of at least 1 cannot make a finite value non-finite, so the count
        // after the division is the count after the sum.
        launchScanFinite(packed, type, total, &m_counters->nonFiniteAfter, &m_counters->amaxBits, stream);
        copyBetween(tensors, packed, false);
        checkCuda(
            cudaMemcpyAsync(m_hostCounters, m_counters, sizeof(AllReduceCounters), cudaMemcpyDeviceToHost, stream),
            "cudaMemcpyAsync (all-reduce counters)");
        waitForStream();
        const AllReduceCounters& c = *m_hostCounters;
        AllReduceOutcome outcome;
        outcome.localNonFinite = c.nonFiniteBefore > 0;
        outcome.flushedByDivision = static_cast<std::int64_t>(c.flushed);
        // As on the host: an overflow is a non-finite sum of values that were all finite here.
        outcome.overflowedInSum = is16Bit && !outcome.localNonFinite ? static_cast<std::int64_t>(c.nonFiniteAfter) : 0;
        std::memcpy(&outcome.amax, &c.amaxBits, sizeof outcome.amax);
        return outcome;
    }

    // Polls until the communicator has no operation in progress.
    void waitForComm(const char* what)
    {
        for (;;) {
            ncclResult_t state = ncclSuccess;
            const ncclResult_t status = m_nccl.commGetAsyncError(m_comm, &state);
            if (status != ncclSuccess)
                fail(ncclFailure(m_nccl, status, "ncclCommGetAsyncError", m_comm));
            if (state == ncclSuccess)
                return;
            if (state != ncclInProgress)
                fail(ncclFailure(m_nccl, state, what, m_comm));
            giveUpIfInterrupted(what);
            std::this_thread::yield();
        }
    }

private:
    // Copies `tensors` into the packed buffer one after the other (`pack`), or back out of it.
    void copyBetween(std::span<Tensor* const> tensors, char* packed, bool pack)
    {
        std::size_t offset = 0;
        for (Tensor* t : tensors) {
            void* from = pack ? t->data() : packed + offset;
            void* to = pack ? packed + offset : t->data();
            checkCuda(cudaMemcpyAsync(to, from, t->bytes(), cudaMemcpyDeviceToDevice, m_backend.stream()),
                      pack ? "cudaMemcpyAsync (packing the gradients)" : "cudaMemcpyAsync (unpacking the gradients)");
            offset += t->bytes();
        }
    }

    // Polls the stream (the sum, and the copies after it) and NCCL's error state.
    void waitForStream()
    {
        for (;;) {
            const cudaError_t done = cudaStreamQuery(m_backend.stream());
            if (done == cudaSuccess)
                return;
            if (done != cudaErrorNotReady) {
                m_broken = true;
                checkCuda(done, "the NCCL all-reduce's stream");
            }
            ncclResult_t state = ncclSuccess;
            if (m_nccl.commGetAsyncError(m_comm, &state) == ncclSuccess && state != ncclSuccess &&
                state != ncclInProgress)
                fail(ncclFailure(m_nccl, state, "ncclAllReduce", m_comm));
            giveUpIfInterrupted("the NCCL all-reduce");
            std::this_thread::yield();
        }
    }

    void giveUpIfInterrupted(const char* what)
    {
        if (!m_interruption)
            return;
        if (const std::string why = m_interruption(); !why.empty())
            fail(std::string(what) + ": " + why);
    }

    [[noreturn]] void fail(const std::string& why)
    {
        m_broken = true;
        throw ResourceError(why);
    }

    CudaBackend& m_backend;
    const NcclLibrary& m_nccl;
    ncclComm_t m_comm;
    std::function<std::string()> m_interruption;
    std::array<Tensor, 3> m_flat; // the packed gradients, one buffer per type (F32, F16, BF16)
    AllReduceCounters* m_counters = nullptr;
    AllReduceCounters* m_hostCounters = nullptr; // pinned: the copy back is polled, never waited on
    bool m_broken = false;
};

} // namespace

std::string ncclVersionText(std::string& whyNot)
{
    const NcclLibrary* nccl = ncclLibrary(whyNot);
    return nccl ? nccl->version : std::string();
}

std::string makeNcclUniqueId(std::string& whyNot)
{
    const NcclLibrary* nccl = ncclLibrary(whyNot);
    if (!nccl)
        return {};
    ncclUniqueId id{};
    if (const ncclResult_t status = nccl->getUniqueId(&id); status != ncclSuccess) {
        whyNot = ncclFailure(*nccl, status, "ncclGetUniqueId");
        return {};
    }
    return std::string(id.internal, sizeof id.internal);
}

std::unique_ptr<DeviceAllReduce> makeNcclAllReduce(Backend& backend, const std::string& uniqueId, int rank, int size,
                                                   std::function<std::string()> interruption, std::string& whyNot)
{
    const NcclLibrary* nccl = ncclLibrary(whyNot);
    if (!nccl)
        return nullptr;
    auto* cuda = dynamic_cast<CudaBackend*>(&backend);
    if (!cuda) {
        whyNot = "NCCL sums device buffers, and " + backend.name() + " is not a CUDA backend";
        return nullptr;
    }
    ncclUniqueId id{};
    if (uniqueId.size() != sizeof id.internal) {
        whyNot = "the NCCL id from rank 0 has " + std::to_string(uniqueId.size()) + " bytes, not " +
                 std::to_string(sizeof id.internal);
        return nullptr;
    }
    std::memcpy(id.internal, uniqueId.data(), sizeof id.internal);
    try {
        // NCCL binds the communicator to the current device: the backend's.
        checkCuda(cudaSetDevice(cuda->device().index), "cudaSetDevice");
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.blocking = 0;
        ncclComm_t comm = nullptr;
        const ncclResult_t status = nccl->commInitRankConfig(&comm, size, id, rank, &config);
        if (status != ncclSuccess && status != ncclInProgress) {
            whyNot = ncclFailure(*nccl, status, "ncclCommInitRankConfig");
            if (comm)
                nccl->commAbort(comm);
            return nullptr;
        }
        auto allReduce = std::make_unique<NcclAllReduce>(*cuda, *nccl, comm, std::move(interruption));
        allReduce->waitForComm("ncclCommInitRankConfig (every rank must join)");
        return allReduce;
    } catch (const Error& e) {
        whyNot = e.what();
        return nullptr;
    }
}

} // namespace mantissa::cuda
