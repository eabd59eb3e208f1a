#pragma once
// The runs of the run database as a table: name, preset, precision, ranks (data parallel),
// the run a fork continues and at which step, status, the best test figure of the run's task
// (accuracy, RMSE or bits per character: engine/observe/task_metric.h), skipped steps, duration,
// created, tags and notes. Names are editable in place (a rename in the database); Qt::UserRole
// holds raw values for sorting.
#include "engine/observe/task_metric.h"
#include "storage/run_types.h"

#include <QAbstractTableModel>

namespace mantissa::storage {
class RunStore;
}

namespace mantissa::ui {

class RunListModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        Name,
        Preset,
        Precision,
        Ranks,
        ForkedFrom,
        Status,
        BestMetric,
        Skipped,
        Duration,
        Created,
        Tags,
        Notes,
        ColumnCount
    };
    static constexpr int SortRole = Qt::UserRole;
    static constexpr int RunIdRole = Qt::UserRole + 1;

    explicit RunListModel(QObject* parent = nullptr);

    // The store stays owned by the caller; nullptr empties the model.
    void setStore(storage::RunStore* store);
    // Reads the run list again (after a run, or another process wrote to the database).
    void reload();

    qint64 runId(int row) const;
    int rowOfRun(qint64 runId) const;
    const storage::RunInfo& run(int row) const { return m_runs[row]; }

    // Organising runs; each returns false and emits storeError with the reason on failure.
    bool setNotes(int row, const QString& notes);
    bool setTags(int row, const QStringList& tags);
    bool deleteRun(int row);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

signals:
    void storeError(const QString& message);

private:
    void refreshRow(int row);

    storage::RunStore* m_store = nullptr;
    QList<storage::RunInfo> m_runs;
    // Each run's task metric, parsed once from its stored config (not at every paint).
    QList<TaskMetric> m_metrics;
};

} // namespace mantissa::ui
