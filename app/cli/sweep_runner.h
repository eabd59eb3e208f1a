#pragma once
// Runs the missing runs of a sweep on this machine: up to `jobs` worker processes at once
// (`mantissa-cli sweep-worker`, the same binary), each with `threads` CPU threads, all
// recording into the same run database. Shows progress on stderr (done, running, failed,
// ETA). A worker that crashes or is killed leaves its run "interrupted" (marked here at
// once); one that fails before its run exists gets a "failed" run with the worker's message;
// either way the sweep goes on, and the next `sweep` redoes those runs. Ctrl-C stops the
// running workers at a step boundary (their runs end "stopped") and starts no more. Workers
// die with the sweep process (PR_SET_PDEATHSIG), so a killed sweep leaves no orphan.
#include "engine/sweep/sweep_spec.h"
#include "storage/run_store.h"

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

SweepRunOutcome runSweepLocally(storage::RunStore& store, qint64 sweepId, const SweepPlan& plan,
                                const std::vector<int>& indices, const SweepRunnerOptions& options);

} // namespace mantissa::cli
