#include "storage/run_sql.h"

#include "storage/connection.h"
#include "storage/db_values.h"
#include "storage/storage_error.h"

#include <QDir>
#include <QFileInfo>

#include <algorithm>
#include <array>
#include <cmath>

namespace mantissa::storage {

FinishedRow finishedRow(const RunSummary& s)
{
    FinishedRow row;
    row.status = s.status;
    if (s.epochs > 0) {
        row.summary.finalTrainLoss = s.trainLoss;
        row.summary.bestTestAccuracy = s.bestTestAccuracy;
        row.summary.finalTestAccuracy = s.testAccuracy;
        row.summary.finalTestLoss = s.testLoss;
        if (std::isfinite(s.bestTestLoss))
            row.summary.bestTestLoss = s.bestTestLoss;
    }
    if (s.steps > 0) {
        row.summary.steps = s.steps;
        row.summary.skippedSteps = s.skippedSteps;
        row.summary.finalLossScale = s.finalLossScale;
    }
    if (s.samplesPerSecond > 0)
        row.summary.samplesPerSecond = s.samplesPerSecond;
    if (s.wallSeconds > 0)
        row.wallSeconds = s.wallSeconds;
    if (s.peakBytes > 0)
        row.peakMemoryBytes = qint64(s.peakBytes);
    const bool explained =
        s.status == RunStatus::Diverged || s.status == RunStatus::Failed || s.status == RunStatus::Interrupted;
    if (explained)
        row.errorMessage = QString::fromStdString(s.message);
    row.ranks = s.ranks;
    return row;
}

QString finishRunSql()
{
    return QStringLiteral("UPDATE runs SET status = :status, finished_at = :finished_at, "
                          "wall_seconds = :wall_seconds, peak_memory_bytes = :peak_memory_bytes, "
                          "final_train_loss = :final_train_loss, best_test_accuracy = :best_test_accuracy, "
                          "final_test_accuracy = :final_test_accuracy, final_test_loss = :final_test_loss, "
                          "best_test_loss = :best_test_loss, steps = :steps, "
                          "skipped_steps = :skipped_steps, final_loss_scale = :final_loss_scale, "
                          "samples_per_second = :samples_per_second, error_message = :error_message "
                          "WHERE id = :id");
}

void bindFinish(QSqlQuery& query, qint64 runId, const FinishedRow& row)
{
    const StoredSummary& s = row.summary;
    query.bindValue(QStringLiteral(":status"), QString::fromLatin1(runStatusName(row.status)));
    query.bindValue(QStringLiteral(":finished_at"), nowDbTime());
    query.bindValue(QStringLiteral(":wall_seconds"), nullable(row.wallSeconds));
    query.bindValue(QStringLiteral(":peak_memory_bytes"), nullable(row.peakMemoryBytes));
    query.bindValue(QStringLiteral(":final_train_loss"), nullable(s.finalTrainLoss));
    query.bindValue(QStringLiteral(":best_test_accuracy"), nullable(s.bestTestAccuracy));
    query.bindValue(QStringLiteral(":final_test_accuracy"), nullable(s.finalTestAccuracy));
    query.bindValue(QStringLiteral(":final_test_loss"), nullable(s.finalTestLoss));
    query.bindValue(QStringLiteral(":best_test_loss"), nullable(s.bestTestLoss));
    query.bindValue(QStringLiteral(":steps"), nullable(s.steps));
    query.bindValue(QStringLiteral(":skipped_steps"), nullable(s.skippedSteps));
    query.bindValue(QStringLiteral(":final_loss_scale"), nullable(s.finalLossScale));
    query.bindValue(QStringLiteral(":samples_per_second"), nullable(s.samplesPerSecond));
    query.bindValue(QStringLiteral(":error_message"), text(row.errorMessage));
    query.bindValue(QStringLiteral(":id"), runId);
}

void writeRanks(const Connection& connection, qint64 runId, const std::vector<RankThroughput>& ranks)
{
    if (ranks.empty())
        return;
    QSqlQuery insert = connection.prepare(
        QStringLiteral("INSERT OR REPLACE INTO run_ranks (run_id, rank, train_seconds, samples_per_second, "
                       "allreduce_seconds) VALUES (?, ?, ?, ?, ?)"));
    for (const RankThroughput& r : ranks) {
        insert.bindValue(0, runId);
        insert.bindValue(1, r.rank);
        insert.bindValue(2, r.trainSeconds);
        insert.bindValue(3, r.samplesPerSecond);
        insert.bindValue(4, r.allReduceSeconds);
        connection.exec(insert, QStringLiteral("recording rank %1 of run %2").arg(r.rank).arg(runId));
    }
}

QString storedCheckpointPath(const QString& databaseDirectory, const QString& filePath)
{
    const QString absolute = QFileInfo(filePath).absoluteFilePath();
    const QString relative = QDir(databaseDirectory).relativeFilePath(absolute);
    return relative.startsWith(QStringLiteral("../")) || QDir::isAbsolutePath(relative) ? absolute : relative;
}

std::optional<EventKind> parseEventKind(const QString& name)
{
    constexpr std::array kinds{EventKind::Overflow, EventKind::ScaleChange, EventKind::Divergence, EventKind::Finished,
                               EventKind::Error};
    for (EventKind kind : kinds) {
        if (name == QLatin1String(eventKindName(kind)))
            return kind;
    }
    return std::nullopt;
}

QString checkedRunName(const QString& databasePath, const QString& name)
{
    const QString trimmed = name.trimmed();
    QString problem;
    if (trimmed.isEmpty())
        problem = QStringLiteral("a run name cannot be empty");
    else if (trimmed.size() > 200)
        problem = QStringLiteral("the run name \"%1...\" is longer than 200 characters").arg(trimmed.left(40));
    else if (std::all_of(trimmed.begin(), trimmed.end(), [](QChar c) { return c.isDigit(); }))
        problem = QStringLiteral("the run name \"%1\" is all digits, which would read as a run "
                                 "id; add a letter")
                      .arg(trimmed);
    if (!problem.isEmpty())
        throw StorageError(StorageError::Kind::InvalidArgument, databasePath, problem);
    return trimmed;
}

QString checkedTag(const QString& databasePath, const QString& tag)
{
    const QString trimmed = tag.trimmed();
    if (trimmed.isEmpty() || trimmed.size() > 100) {
        throw StorageError(StorageError::Kind::InvalidArgument, databasePath,
                           QStringLiteral("a tag must have 1 to 100 characters (got \"%1\")").arg(tag));
    }
    return trimmed;
}

QVariant dataColumn(const QString& fingerprint, const QString& preparation)
{
    if (fingerprint.isEmpty() && preparation.isEmpty())
        return {};
    return preparation.isEmpty() ? fingerprint : fingerprint + QLatin1Char('\n') + preparation;
}

void splitDataColumn(const QString& column, QString& fingerprint, QString& preparation)
{
    const qsizetype newline = column.indexOf(QLatin1Char('\n'));
    fingerprint = newline < 0 ? column : column.left(newline);
    preparation = newline < 0 ? QString() : column.mid(newline + 1);
}

} // namespace mantissa::storage
