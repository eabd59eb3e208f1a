#include "sweep/sweep_launch.h"

#include "storage/run_store.h"
#include "sweep/sweep_results.h"

#include <algorithm>

namespace mantissa::sweep {

LaunchedSweep launchSweep(storage::RunStore& store, const SweepSpec& spec, SweepPlan plan, bool startNew)
{
    LaunchedSweep launched;
    launched.plan = std::move(plan);
    const QString specJson = QString::fromStdString(sweepSpecToJson(spec));
    std::optional<storage::SweepInfo> existing;
    if (!startNew)
        existing = store.findSweepBySpec(specJson);
    launched.resumed = existing.has_value();
    launched.info =
        existing
            ? *existing
            : store.sweep(store.createSweep({{}, QString::fromStdString(spec.name), specJson, int(spec.runCount())}));
    launched.missing = missingRuns(launched.plan, store.sweepRuns(launched.info.id));
    return launched;
}

Parallelism chooseParallelism(int jobs, int threads, int runs, int cores)
{
    Parallelism p;
    p.jobs = std::clamp(jobs, 1, std::max(1, runs));
    p.threads = threads > 0 ? threads : std::max(1, cores / p.jobs);
    return p;
}

} // namespace mantissa::sweep
