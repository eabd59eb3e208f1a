#pragma once
// Internal: SQL and value rules shared by RunStore and RunWriter.
#include "engine/observe/records.h"
#include "storage/run_types.h"

#include <QSqlQuery>
#include <QString>

#include <optional>

namespace mantissa::storage {

// UPDATE of the runs row when a run ends; bindFinish() fills its placeholders.
QString finishRunSql();
void bindFinish(QSqlQuery& query, qint64 runId, const RunFinish& finish);

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
