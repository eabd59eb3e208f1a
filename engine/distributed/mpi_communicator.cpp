#include "engine/distributed/mpi_communicator.h"

#include "engine/distributed/rounded_sum.h"

// The C API only: Open MPI's and MPICH's mpi.h otherwise pull in the long-removed C++
// bindings, which live in a library CMake's MPI::MPI_C does not link.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <thread>

namespace mantissa {

namespace {

std::atomic<int> g_terminatingSignal{0};

extern "C" void onTerminate(int signal) { g_terminatingSignal = signal; }

// Sums in rank order: the ops are created non-commutative, so MPI combines the ranks'
// contributions in one fixed order and every rank gets the same bits (a commutative sum may be
// combined in a different order on each rank, and fp32 addition is not associative).
extern "C" void sumFloatsInOrder(void* in, void* inout, int* len, MPI_Datatype*)
{
    const float* a = static_cast<const float*>(in);
    float* b = static_cast<float*>(inout);
    for (int i = 0; i < *len; ++i)
        b[i] = a[i] + b[i];
}

extern "C" void sumHalfWords(void* in, void* inout, int* len, MPI_Datatype*)
{
    addRoundedWords(static_cast<const std::uint16_t*>(in), static_cast<std::uint16_t*>(inout),
                    static_cast<std::size_t>(*len), DType::F16);
}

extern "C" void sumBFloat16Words(void* in, void* inout, int* len, MPI_Datatype*)
{
    addRoundedWords(static_cast<const std::uint16_t*>(in), static_cast<std::uint16_t*>(inout),
                    static_cast<std::size_t>(*len), DType::BF16);
}

MPI_Op g_sumFloats = MPI_OP_NULL, g_sumHalf = MPI_OP_NULL, g_sumBFloat16 = MPI_OP_NULL;

void check(int status, const char* what)
{
    if (status == MPI_SUCCESS)
        return;
    char text[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    MPI_Error_string(status, text, &length);
    throw DistributedError(std::string(what) + " failed: " + text);
}

// Why a wait for `what` must end now, or empty.
std::string interruptionBy(const std::string& what)
{
    const int signal = g_terminatingSignal.load();
    if (!signal)
        return {};
    return what + " interrupted by signal " + std::to_string(signal) +
           ": the launcher is ending the job, most likely because another rank failed or was killed (its own "
           "output says why)";
}

// Waits for `request`, giving the cores to the other ranks' threads between tests (ranks
// are often oversubscribed on a workstation), and gives up when the launcher ends the job.
void wait(MPI_Request& request, const char* what)
{
    for (;;) {
        int done = 0;
        check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
        if (done)
            return;
        if (const std::string why = interruptionBy(what); !why.empty())
            throw DistributedError(why);
        std::this_thread::yield();
    }
}

} // namespace

MpiCommunicator::MpiCommunicator()
{
    int provided = 0;
    // Funneled: only the thread that called this runs collectives; OpenMP's threads never do.
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &m_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &m_size);
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    MPI_Get_library_version(version, &length);
    m_description = std::string(version, std::strcspn(version, ",\n"));
    MPI_Op_create(&sumFloatsInOrder, 0, &g_sumFloats);
    MPI_Op_create(&sumHalfWords, 0, &g_sumHalf);
    MPI_Op_create(&sumBFloat16Words, 0, &g_sumBFloat16);
    std::signal(SIGTERM, &onTerminate);
}

MpiCommunicator::~MpiCommunicator()
{
    // Finalising waits for every rank; after a failure the others may be gone or stuck.
    if (m_broken || g_terminatingSignal.load())
        return;
    MPI_Op_free(&g_sumFloats);
    MPI_Op_free(&g_sumHalf);
    MPI_Op_free(&g_sumBFloat16);
    MPI_Finalize();
}

namespace {

template <typename T>
void allReduce(std::span<T> values, MPI_Datatype type, MPI_Op op, bool& broken, const char* what)
{
    if (values.empty())
        return;
    MPI_Request request;
    try {
        check(MPI_Iallreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), type, op, MPI_COMM_WORLD,
                             &request),
              what);
        wait(request, what);
    } catch (...) {
        broken = true;
        throw;
    }
}

} // namespace

void MpiCommunicator::sumFloats(std::span<float> values)
{
    allReduce(values, MPI_FLOAT, g_sumFloats, m_broken, "the fp32 gradient all-reduce");
}

void MpiCommunicator::sumWords(std::span<std::uint16_t> words, DType type)
{
    MANTISSA_ASSERT(type == DType::F16 || type == DType::BF16);
    allReduce(words, MPI_UINT16_T, type == DType::F16 ? g_sumHalf : g_sumBFloat16, m_broken,
              "the 16-bit gradient all-reduce");
}

void MpiCommunicator::sumDoubles(std::span<double> values)
{
    allReduce(values, MPI_DOUBLE, MPI_SUM, m_broken, "the all-reduce of the step's record");
}

void MpiCommunicator::maxDoubles(std::span<double> values)
{
    allReduce(values, MPI_DOUBLE, MPI_MAX, m_broken, "the all-reduce of the step's flags");
}

void MpiCommunicator::broadcast(std::string& text, int root)
{
    try {
        unsigned long long length = text.size();
        MPI_Request request;
        check(MPI_Ibcast(&length, 1, MPI_UNSIGNED_LONG_LONG, root, MPI_COMM_WORLD, &request), "a broadcast");
        wait(request, "a broadcast");
        text.resize(length);
        check(MPI_Ibcast(text.data(), static_cast<int>(length), MPI_CHAR, root, MPI_COMM_WORLD, &request),
              "a broadcast");
        wait(request, "a broadcast");
    } catch (...) {
        m_broken = true;
        throw;
    }
}

std::string MpiCommunicator::interruption() const { return interruptionBy("the device all-reduce"); }

void MpiCommunicator::abortJob(int code)
{
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code); // MPI_Abort does not return; this keeps [[noreturn]] honest
}

} // namespace mantissa
