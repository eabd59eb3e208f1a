#pragma once
// One rank's share of a data-parallel run (docs/distributed.md), gathered to rank 0 when the
// run ends and recorded in the run store's run_ranks table: a slow rank holds every other
// rank up at each all-reduce, so the run's throughput alone does not say which one it was.
#include <cstdint>
#include <span>
#include <string>

namespace mantissa {

struct RankThroughput {
    int rank = 0;
    double trainSeconds = 0;     // the rank's training time, evaluation excluded
    double samplesPerSecond = 0; // the samples of its slices over that time
    double allReduceSeconds = 0; // in all-reduces and step agreement, waiting for the others included

    double allReduceShare() const { return trainSeconds > 0 ? allReduceSeconds / trainSeconds : 0; }
};

// "rank 0: 812 samples/s, all-reduce 14% of its step time; rank 1: ...": the finished event's
// line, the comparison's tooltip and the reports.
std::string describeRanks(std::span<const RankThroughput> ranks);

} // namespace mantissa
