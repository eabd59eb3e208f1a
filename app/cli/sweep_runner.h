#pragma once
// The terminal side of running a sweep here: sweep::SweepRunner (worker processes of this
// same binary) with a line per finished run and a live status line on stderr (done, running,
// failed, ETA); Ctrl-C stops the running workers at a step boundary and starts no more.
#include "engine/sweep/sweep_spec.h"

#include <QString>

#include <vector>

namespace mantissa::cli {

struct SweepRunnerOptions {
    int jobs = 1;
    int threads = 1; // per job
    bool interactive = false;
};

struct SweepRunOutcome {
    int finished = 0, diverged = 0, failed = 0, interrupted = 0, notStarted = 0;
};

SweepRunOutcome runSweepLocally(const QString& databasePath, qint64 sweepId, const SweepPlan& plan,
                                const std::vector<int>& indices, const SweepRunnerOptions& options);

} // namespace mantissa::cli
