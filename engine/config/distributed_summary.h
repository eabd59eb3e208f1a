#pragma once
// How a run's data parallelism reads in every front end (mantissa-cli show, the GUI's run list,
// monitor and comparison, the reports), so that a 1-rank and an N-rank run are told apart the
// same way everywhere.
#include "engine/config/run_config.h"

#include <string>

namespace mantissa {

// The ranks that trained a run: distributed.world_size as recorded (rank 0 records the
// launch's size), 1 for a single process (world_size 0 or absent).
int trainedRanks(const DistributedSpec& distributed);

// "2 ranks, all-reduce in fp32, sum-then-divide, batch norm per-rank"; "1 process" for a single process, whose
// all-reduce settings do nothing.
std::string describeDistributed(const DistributedSpec& distributed);

} // namespace mantissa
