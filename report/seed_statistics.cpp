// ReportData::seeds: the runs of one sweep take the sweep's configurations (its labels and
// planned seeds); other runs are grouped by seed, as the GUI's Comparison tab groups them.
// Without a configuration run over two seeds or more there is nothing to take statistics over.
#include "report/report_data.h"

#include "storage/run_store.h"

namespace mantissa::report {

std::optional<SeedStatistics> seedStatistics(const RunStore& store, const QList<RunData>& runs)
{
    QList<RunInfo> infos;
    qint64 sweepId = 0; // the sweep of every run, or 0
    for (const RunData& run : runs) {
        infos << run.info;
        const qint64 own = run.info.sweepId.value_or(0);
        sweepId = infos.size() == 1 || own == sweepId ? own : 0;
    }
    SeedStatistics seeds;
    if (sweepId > 0) {
        const SweepInfo info = store.sweep(sweepId);
        const std::string origin = "sweep " + std::to_string(sweepId);
        const SweepPlan plan = expandSweep(parseSweepSpec(info.specJson.toStdString(), origin, ""), origin);
        seeds.results = sweep::collectResults(plan, infos);
        seeds.title = QStringLiteral("Sweep %1 (%2)").arg(sweepId).arg(info.name);
    } else {
        seeds.results = sweep::groupBySeed(infos);
        seeds.title = QStringLiteral("Runs grouped by seed");
    }
    if (!sweep::hasSeveralSeeds(seeds.results))
        return std::nullopt;
    for (const sweep::ConfigurationResults& r : seeds.results) {
        QList<int> finished;
        for (const RunInfo& run : r.runs)
            if (run.status == RunStatus::Finished)
                for (int i = 0; i < runs.size(); ++i)
                    if (runs[i].info.id == run.id)
                        finished << i;
        seeds.finishedRuns << finished;
    }
    seeds.metric = sweep::sweepTaskMetric(seeds.results);
    seeds.table = sweep::statisticsTable(seeds.results);
    seeds.sentences = sweep::pairSentences(seeds.results);
    return seeds;
}

} // namespace mantissa::report
