#pragma once
// The kernels around an on-device all-reduce (nccl_all_reduce.cpp): the divisions before and
// after the sum with the host path's rounding points (distributed/host_average.cpp), and the
// counts the run records. Enqueue only, like kernels.h.
#include "engine/numerics/dtype.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace mantissa::cuda {

// What the kernels accumulate for one all-reduce; zeroed before it.
struct AllReduceCounters {
    unsigned long long nonFiniteBefore; // this rank's inf and NaN before the sum
    unsigned long long flushed;         // nonzero quotients the division's rounding made zero
    unsigned long long nonFiniteAfter;  // inf and NaN after the sum
    unsigned int amaxBits;              // the largest |value| after the sum, NaNs aside, as fp32 bits
    unsigned int unused;
};

// values[i] = round_to_type(values[i] / divisor), the division in fp32 (IEEE, as the host's
// `v /= d`), the rounding to nearest even; counts into *flushed (when not null) each nonzero
// quotient the rounding made zero.
void launchDivideRounded(void* values, DType type, std::int64_t n, float divisor, unsigned long long* flushed,
                         cudaStream_t stream);

// Adds the inf and NaN among `values` to *nonFinite and, when amaxBits is not null, raises it
// to the largest |value| (an unsigned comparison of non-negative fp32 bits orders them).
void launchScanFinite(const void* values, DType type, std::int64_t n, unsigned long long* nonFinite,
                      unsigned int* amaxBits, cudaStream_t stream);

} // namespace mantissa::cuda
