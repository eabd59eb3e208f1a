#include "sweep/sweep_results.h"

#include "storage/run_store.h"

#include <QHash>
#include <QSet>

namespace mantissa::sweep {

namespace {

using storage::RunInfo;

bool isResult(const RunInfo& run) { return run.status == RunStatus::Finished || run.status == RunStatus::Diverged; }

} // namespace

std::vector<ConfigurationResults> collectResults(const SweepPlan& plan, const QList<RunInfo>& sweepRuns)
{
    // Per index: the latest attempt that is a result, else the latest attempt.
    QHash<int, RunInfo> chosen;
    for (const RunInfo& run : sweepRuns) { // oldest attempt first
        if (!run.sweepIndex)
            continue;
        const auto it = chosen.constFind(*run.sweepIndex);
        if (it == chosen.constEnd() || isResult(run) || !isResult(*it))
            chosen.insert(*run.sweepIndex, run);
    }
    std::vector<ConfigurationResults> results(plan.configurations.size());
    for (std::size_t c = 0; c < results.size(); ++c)
        results[c].configuration = plan.configurations[c];
    for (const SweepRun& run : plan.runs) {
        ConfigurationResults& r = results[std::size_t(run.configuration)];
        ++r.planned;
        const auto it = chosen.constFind(run.index);
        if (it == chosen.constEnd())
            continue;
        r.runs << *it;
        switch (it->status) {
        case RunStatus::Finished: ++r.finished; break;
        case RunStatus::Diverged: ++r.diverged; break;
        case RunStatus::Failed: ++r.failed; break;
        default: ++r.interrupted; break; // interrupted, stopped, or still running
        }
    }
    return results;
}

std::vector<int> missingRuns(const SweepPlan& plan, const QList<RunInfo>& sweepRuns)
{
    QSet<int> done;
    for (const RunInfo& run : sweepRuns)
        if (run.sweepIndex && isResult(run))
            done.insert(*run.sweepIndex);
    std::vector<int> missing;
    for (const SweepRun& run : plan.runs)
        if (!done.contains(run.index))
            missing.push_back(run.index);
    return missing;
}

StoredSweep loadStoredSweep(const storage::RunStore& store, qint64 sweepId)
{
    StoredSweep sweep;
    sweep.info = store.sweep(sweepId);
    const std::string origin = "sweep " + std::to_string(sweepId);
    sweep.spec = parseSweepSpec(sweep.info.specJson.toStdString(), origin, "");
    sweep.plan = expandSweep(sweep.spec, origin);
    sweep.results = collectResults(sweep.plan, store.sweepRuns(sweepId));
    return sweep;
}

} // namespace mantissa::sweep
