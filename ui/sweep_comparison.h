#pragma once
// What the Comparison tab shows for a sweep, or for several runs of one configuration with
// different seeds: the results per configuration (Mantissa::sweep), the finished runs of each
// read back for their curves, the statistics table and the sentence per pair.
#include "sweep/sweep_curves.h"
#include "sweep/sweep_statistics.h"
#include "ui/run_recording.h"

#include <memory>
#include <optional>

namespace mantissa::storage {
class RunStore;
}

namespace mantissa::ui {

struct SweepComparison {
    QString title;      // "sweep 3 (mlp: fp32 vs mixed-fp16): 6 of 6 runs"
    qint64 sweepId = 0; // 0 for runs grouped by seed
    std::vector<sweep::ConfigurationResults> results;
    TaskMetric metric = TaskMetric::Accuracy; // sweep::sweepTaskMetric of the results
    // Per configuration, its finished runs (the runs the statistics are over).
    QList<QList<std::shared_ptr<const RunRecording>>> finishedRuns;
    sweep::StatisticsTable table;
    QStringList sentences;

    int configurationCount() const { return int(results.size()); }
    QString label(int configuration) const;
};

// Throws StorageError or ConfigError (a stored config or spec this version refuses).
SweepComparison loadSweepComparison(const storage::RunStore& store, qint64 sweepId);
// The runs grouped by seed (sweep::groupBySeed); nullopt when no group holds two seeds, where
// the plain run-by-run comparison says more.
std::optional<SweepComparison> loadSeedGroupComparison(const storage::RunStore& store, const QList<qint64>& runIds);

// The curves the tab draws for a configuration: the train loss per step, each run smoothed
// as the run-by-run comparison smooths it (EMA 0.8) before the band is taken, and the test
// metric per epoch (accuracy as a fraction, RMSE, bits per character).
sweep::BandCurve lossBand(const QList<std::shared_ptr<const RunRecording>>& runs, sweep::BandKind kind);
sweep::BandCurve testMetricBand(const QList<std::shared_ptr<const RunRecording>>& runs, sweep::BandKind kind,
                                TaskMetric metric);

} // namespace mantissa::ui
