#pragma once
// Starting a sweep in a run store, the same way from the CLI and the GUI: with the spec expanded
// (expandSweep: every run's config checked before anything is written), the newest sweep with
// exactly this spec is resumed (only its missing runs are trained) unless a new one is asked for.
#include "engine/sweep/sweep_spec.h"
#include "storage/run_types.h"

#include <vector>

namespace mantissa::storage {
class RunStore;
}

namespace mantissa::sweep {

struct LaunchedSweep {
    storage::SweepInfo info;
    SweepPlan plan;
    std::vector<int> missing; // run indices still to do
    bool resumed = false;     // the store already held this sweep
};

// `plan` is expandSweep(spec). Throws StorageError.
LaunchedSweep launchSweep(storage::RunStore& store, const SweepSpec& spec, SweepPlan plan, bool startNew);

// Runs at once and CPU threads per run for `runs` runs: `jobs` (at least 1, at most the
// runs), and `threads` when given (> 0), else the cores shared out so that jobs x threads
// does not oversubscribe them.
struct Parallelism {
    int jobs = 1, threads = 1;
};
Parallelism chooseParallelism(int jobs, int threads, int runs, int cores);

} // namespace mantissa::sweep
