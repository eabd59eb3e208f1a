#pragma once
// The ranks of a data-parallel run, as the engine sees them: who this process is and the
// collectives the trainer needs. The MPI implementation (mpi_communicator.cpp) is compiled in
// only where CMake finds MPI; connect_ranks.h picks it. On GPUs the gradient sums may run on
// the device instead (NCCL, bootstrapped through this communicator: all_reduce_path.h); the
// small collectives (flags, loss scale, stop) stay here.
//
// Every collective must be entered by every rank in the same order; every rank gets the same
// bits back (sums are done in rank order, not in whatever order messages arrive), which is what
// keeps the replicas' weights identical.
#include "engine/numerics/dtype.h"
#include "engine/util/check.h"

#include <cstdint>
#include <span>
#include <string>

namespace mantissa {

// A rank failed, was killed, or disagrees with the others: the run cannot go on.
class DistributedError : public Error {
    using Error::Error;
};

class Communicator {
public:
    virtual ~Communicator() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    // "Open MPI v4.1.4" and the like, for messages and the run record.
    virtual std::string description() const = 0;

    // Element-wise sums across ranks, in place.
    virtual void sumFloats(std::span<float> values) = 0;
    // Sums 16-bit words of `type` (fp16 or bf16), every partial sum rounded to `type` with
    // round-to-nearest-even: a 16-bit all-reduce as a GPU library does it, overflow included.
    virtual void sumWords(std::span<std::uint16_t> words, DType type) = 0;
    virtual void sumDoubles(std::span<double> values) = 0;
    virtual void maxDoubles(std::span<double> values) = 0;
    // Rank `root`'s text into every rank's `text`.
    virtual void broadcast(std::string& text, int root) = 0;
    // Why a wait outside this communicator (a device all-reduce) should be given up now (the
    // launcher is ending the job), or empty.
    virtual std::string interruption() const { return {}; }
    // Ends every rank of the job now, with `code`: a rank that fails alone would otherwise
    // leave the others waiting in their next collective for ever.
    [[noreturn]] virtual void abortJob(int code) = 0;
};

} // namespace mantissa
