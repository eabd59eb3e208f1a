#pragma once
// Export of a run's rows for other tools: CSV (one table per file, the column names of
// the database) and JSON (the run's metadata, config, steps, epochs and events in one
// document). Numbers are written in the shortest form that reads back to the same
// float; a NaN is an empty CSV field and a JSON null, an infinity "inf"/"-inf" in CSV
// and null in JSON (JSON has neither).
#include <QByteArray>
#include <QIODevice>

namespace mantissa::storage {

class RunStore;

enum class ExportTable { Steps, Epochs };

// Throw StorageError: NotFound for an unknown run, Io when the device refuses a write.
void writeCsv(const RunStore& store, qint64 runId, ExportTable table, QIODevice& out);
QByteArray exportCsv(const RunStore& store, qint64 runId, ExportTable table);

void writeJson(const RunStore& store, qint64 runId, QIODevice& out);
QByteArray exportJson(const RunStore& store, qint64 runId);

} // namespace mantissa::storage
