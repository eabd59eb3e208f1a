#pragma once
// Internal: SQL and value rules shared by RunStore and RunWriter.
#include "engine/observe/records.h"
#include "storage/run_types.h"

#include <QSqlQuery>
#include <QString>

#include <optional>
#include <vector>

namespace mantissa::storage {

class Connection;

// What a run's end writes into its runs row.
struct FinishedRow {
    RunStatus status = RunStatus::Finished;
    StoredSummary summary;
    std::optional<double> wallSeconds;
    std::optional<qint64> peakMemoryBytes;
    QString errorMessage;
    std::vector<RankThroughput> ranks; // run_ranks rows (data parallel)
};
// The row for the engine's summary. Values the engine marks as placeholders stay unset
// (run_summary.h): losses and accuracies before the first evaluation, step counts when no
// step ran, an unmeasured throughput, wall time or peak memory. The message is kept for runs
// that diverged, failed or were interrupted only: error_message says what went wrong, and a
// stopped run's "stopped by the user at step N" is not that.
FinishedRow finishedRow(const RunSummary& summary);

// UPDATE of the runs row when a run ends; bindFinish() fills its placeholders.
QString finishRunSql();
void bindFinish(QSqlQuery& query, qint64 runId, const FinishedRow& row);
// The run_ranks rows of a data-parallel run's end (none for a single process).
void writeRanks(const Connection& connection, qint64 runId, const std::vector<RankThroughput>& ranks);

// runs.data_fingerprint: the fingerprint, then on the following lines how the data was prepared
// (a run recorded before the preparation was stored holds the fingerprint alone). NULL when
// neither is known.
QVariant dataColumn(const QString& fingerprint, const QString& preparation);
void splitDataColumn(const QString& column, QString& fingerprint, QString& preparation);

// Stored relative to the database's directory when inside it, so that a database copied
// together with its checkpoints keeps working; absolute otherwise.
QString storedCheckpointPath(const QString& databaseDirectory, const QString& filePath);

std::optional<EventKind> parseEventKind(const QString& name);

// Throw StorageError (InvalidArgument) naming the database for an unusable value.
// Names must be unique (checked by the caller), non-empty, at most 200 characters and
// not all digits, so that "12" always means the run with id 12.
QString checkedRunName(const QString& databasePath, const QString& name);
QString checkedTag(const QString& databasePath, const QString& tag);

} // namespace mantissa::storage
