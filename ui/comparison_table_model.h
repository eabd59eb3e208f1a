#pragma once
// The comparison's results table: one row per run with precision, batch size, ranks (data
// parallel), the test and validation metrics, time to train, throughput (per rank in the tooltip), speedup against
// the chosen baseline, skipped steps, final loss scale and
// peak memory.
#include "ui/run_recording.h"

#include <QAbstractTableModel>

#include <memory>

namespace mantissa::ui {

// Baseline training time over the run's: > 1 means the run trained faster. Training time
// excludes evaluation, so the figure measures the step loop that precision changes.
// Returns 0 when either time is unknown.
double speedup(const RunSummary& baseline, const RunSummary& run);

class ComparisonTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        Run,
        Precision,
        Batch,
        Ranks,
        TestAccuracy,
        ValidationMetric,
        TrainTime,
        Throughput,
        Speedup,
        Skipped,
        FinalScale,
        PeakMemory,
        ColumnCount
    };

    explicit ComparisonTableModel(QObject* parent = nullptr);

    void setRuns(QList<std::shared_ptr<const RunRecording>> runs);
    void setBaseline(int row);
    int baseline() const { return m_baseline; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    QList<std::shared_ptr<const RunRecording>> m_runs;
    int m_baseline = 0;
};

} // namespace mantissa::ui
