#include "ui/sweep_comparison.h"

#include "storage/run_store.h"
#include "ui/smoothing.h"
#include "ui/stored_run.h"

namespace mantissa::ui {

namespace {

// The smoothing of the run-by-run comparison's loss plot (comparison_view.cpp).
constexpr double kLossSmoothing = 0.8;

void fill(SweepComparison& comparison, const storage::RunStore& store)
{
    for (const sweep::ConfigurationResults& r : comparison.results) {
        QList<std::shared_ptr<const RunRecording>> runs;
        for (const storage::RunInfo& run : r.runs)
            if (run.status == RunStatus::Finished)
                runs << loadStoredRun(store, run.id);
        comparison.finishedRuns << runs;
    }
    comparison.metric = sweep::sweepTaskMetric(comparison.results);
    comparison.table = sweep::statisticsTable(comparison.results);
    comparison.sentences = sweep::pairSentences(comparison.results);
}

} // namespace

QString SweepComparison::label(int configuration) const
{
    return QString::fromStdString(results[std::size_t(configuration)].configuration.label);
}

SweepComparison loadSweepComparison(const storage::RunStore& store, qint64 sweepId)
{
    const sweep::StoredSweep stored = sweep::loadStoredSweep(store, sweepId);
    SweepComparison comparison;
    comparison.sweepId = sweepId;
    comparison.results = stored.results;
    int have = 0;
    for (const sweep::ConfigurationResults& r : stored.results)
        have += r.results();
    comparison.title = QObject::tr("Sweep %1 (%2): %3 of %4 runs, %5 configurations × %6 seeds")
                           .arg(sweepId)
                           .arg(stored.info.name)
                           .arg(have)
                           .arg(stored.plan.runs.size())
                           .arg(stored.plan.configurations.size())
                           .arg(stored.spec.seeds.size());
    fill(comparison, store);
    return comparison;
}

std::optional<SweepComparison> loadSeedGroupComparison(const storage::RunStore& store, const QList<qint64>& runIds)
{
    QList<storage::RunInfo> runs;
    for (qint64 id : runIds)
        runs << store.run(id);
    SweepComparison comparison;
    comparison.results = sweep::groupBySeed(runs);
    if (!sweep::hasSeveralSeeds(comparison.results))
        return std::nullopt;
    comparison.title =
        QObject::tr("%1 runs as %2 configurations over their seeds").arg(runs.size()).arg(comparison.results.size());
    fill(comparison, store);
    return comparison;
}

sweep::BandCurve lossBand(const QList<std::shared_ptr<const RunRecording>>& runs, sweep::BandKind kind)
{
    QList<sweep::Curve> curves;
    for (const auto& run : runs)
        curves << sweep::Curve{run->step, smoothed(run->loss, kLossSmoothing)};
    return sweep::bandCurve(curves, kind);
}

sweep::BandCurve testMetricBand(const QList<std::shared_ptr<const RunRecording>>& runs, sweep::BandKind kind,
                                TaskMetric metric)
{
    QList<sweep::Curve> curves;
    for (const auto& run : runs) {
        QVector<double> values;
        for (qsizetype i = 0; i < run->epoch.size(); ++i)
            values << taskMetricValue(metric, run->testLoss.value(i, NAN), run->testAccuracy.value(i, NAN));
        curves << sweep::Curve{run->epoch, values};
    }
    return sweep::bandCurve(curves, kind);
}

} // namespace mantissa::ui
