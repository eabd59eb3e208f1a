#pragma once
// A gradient all-reduce that sums device buffers where they are (NCCL on GPUs), instead of
// downloading them, summing through MPI on the host and uploading them again. The CUDA plugin
// implements it (backend/cuda/nccl_all_reduce); distributed/data_parallel uses it when every
// rank has one (distributed/all_reduce_path). It lives in backend/ rather than distributed/
// because the plugin implements it, and backend/ must not include distributed/.
//
// What it computes is the host path's arithmetic (distributed/host_average.h), with the same
// rounding points: each value divided by `before` in fp32 and rounded to its type, summed
// across ranks (a 16-bit sum rounded to the type at every addition), divided by `after` in
// fp32 and rounded again.
#include "engine/backend/backend.h"

#include <cstdint>
#include <span>
#include <string>

namespace mantissa {

// The divisions around the sum: 1 where a side does not divide.
struct AllReduceDivisors {
    float before = 1.0f;
    float after = 1.0f;
};

// What one all-reduce did, as this rank saw it.
struct AllReduceOutcome {
    bool localNonFinite = false;        // this rank's own values had an inf or NaN before the sum
    std::int64_t flushedByDivision = 0; // nonzero values rounded to zero by the division before the sum (16-bit)
    std::int64_t overflowedInSum = 0;   // non-finite after the sum though this rank's were all finite
    float amax = 0;                     // largest |value| of the result, NaNs aside
};

class DeviceAllReduce {
public:
    virtual ~DeviceAllReduce() = default;
    // "NCCL 2.28.9 on device": what the run's record says about its all-reduce.
    virtual std::string description() const = 0;
    // Averages `tensors` (all of `type`: F32, F16 or BF16, on this backend's device) across
    // ranks in place. Collective: every rank calls it with the same sizes in the same order.
    // Returns when the result is in `tensors` and the counts are known. A failed or abandoned
    // sum (NCCL's error, or the wait given up because the launcher is ending the job) throws
    // a ResourceError naming it; the communicator cannot be used after that.
    virtual AllReduceOutcome average(std::span<Tensor* const> tensors, DType type, AllReduceDivisors divisors) = 0;
};

} // namespace mantissa
