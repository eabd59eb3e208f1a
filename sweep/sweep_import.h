#pragma once
// Importing other run databases (the per-task files a Slurm sweep leaves under DIR/runs) into
// a run store, for `mantissa-cli import` and the GUI's "Import sweep directory…". Importing
// twice adds nothing; the runs of one sweep meet in one sweep again (RunStore::importRuns). A
// file that is not a Mantissa run database is skipped by name and the others still imported.
#include "storage/run_types.h"

#include <QList>
#include <QString>
#include <QStringList>

namespace mantissa::storage {
class RunStore;
}

namespace mantissa::sweep {

// The database files a path names: itself, or the *.sqlite and *.db files under a directory
// (recursively; logs, scripts and checkpoints are not), sorted. Throws StorageError
// (NotFound) for a path that does not exist.
QStringList databaseFiles(const QString& path);

struct FileImport {
    QString file;
    storage::ImportResult result;
    QString skipped; // why the file was skipped (StorageError's message); empty when imported
};

struct ImportSummary {
    QList<FileImport> files;
    storage::ImportResult total; // sweeps: those that received runs, by name
    int skippedFiles = 0;
    QString text() const; // "3 files: 4 runs imported, 0 already here, 0 still running, 1 file skipped"
};

// Imports every database file under `paths` (directories or files) except the store's own
// file. Throws StorageError only for a path that does not exist.
ImportSummary importDatabases(storage::RunStore& store, const QStringList& paths);

} // namespace mantissa::sweep
