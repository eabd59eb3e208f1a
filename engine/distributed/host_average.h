#pragma once
// The gradient average on the host (the MPI path), and the divisions each reduction order
// asks for. Its arithmetic defines the rounding points a device all-reduce must reproduce
// (backend/device_all_reduce.h): nccl_all_reduce_test holds NCCL to it bit for bit.
#include "engine/backend/device_all_reduce.h"
#include "engine/config/run_config.h"
#include "engine/distributed/communicator.h"

#include <vector>

namespace mantissa {

// sum-then-divide: 1 and N; divide-then-sum: N and 1; sqrt-split: sqrt(N) at both ends.
AllReduceDivisors reductionDivisors(ReductionOrder order, int worldSize);

// Averages `values` (this rank's gradients widened to fp32; for F16 and BF16 each one
// representable in that type) across the ranks of `communicator`, in `type`: F32 divides and
// sums in fp32; F16 and BF16 round every division and every partial sum to the type and send
// 16-bit words. `values` holds the result, widened to fp32.
AllReduceOutcome averageOnHost(Communicator& communicator, std::vector<float>& values, DType type,
                               AllReduceDivisors divisors);

} // namespace mantissa
