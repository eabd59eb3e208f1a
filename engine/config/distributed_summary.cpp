#include "engine/config/distributed_summary.h"

#include <algorithm>

namespace mantissa {

int trainedRanks(const DistributedSpec& distributed) { return std::max(1, distributed.worldSize); }

std::string describeDistributed(const DistributedSpec& distributed)
{
    const int ranks = trainedRanks(distributed);
    if (ranks == 1)
        return "1 process";
    return std::to_string(ranks) + " ranks, all-reduce in " + std::string(enumKey(distributed.allReduceType)) + ", " +
           std::string(enumKey(distributed.reduction)) + ", batch norm " + std::string(enumKey(distributed.batchNorm));
}

} // namespace mantissa
