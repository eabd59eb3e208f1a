#include "engine/observe/rank_throughput.h"

#include <cstdio>

namespace mantissa {

std::string describeRanks(std::span<const RankThroughput> ranks)
{
    std::string text;
    for (const RankThroughput& r : ranks) {
        char line[160];
        std::snprintf(line, sizeof line, "%srank %d: %.0f samples/s, all-reduce %.0f%% of its step time",
                      text.empty() ? "" : "; ", r.rank, r.samplesPerSecond, 100.0 * r.allReduceShare());
        text += line;
    }
    return text;
}

} // namespace mantissa
