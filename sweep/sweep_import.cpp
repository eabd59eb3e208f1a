#include "sweep/sweep_import.h"

#include "storage/run_store.h"
#include "storage/storage_error.h"

#include <QDirIterator>
#include <QFileInfo>

#include <algorithm>

namespace mantissa::sweep {

QStringList databaseFiles(const QString& path)
{
    const QFileInfo info(path);
    if (!info.exists())
        throw storage::StorageError(storage::StorageError::Kind::NotFound, info.absoluteFilePath(),
                                    QStringLiteral("does not exist"));
    if (!info.isDir())
        return {info.absoluteFilePath()};
    QStringList files;
    QDirIterator it(info.absoluteFilePath(), {QStringLiteral("*.sqlite"), QStringLiteral("*.db")}, QDir::Files,
                    QDirIterator::Subdirectories);
    while (it.hasNext())
        files << it.next();
    std::sort(files.begin(), files.end());
    return files;
}

QString ImportSummary::text() const
{
    return QStringLiteral("%1 files: %2 runs imported, %3 already here, %4 still running, %5 files skipped")
        .arg(files.size())
        .arg(total.imported)
        .arg(total.alreadyPresent)
        .arg(total.stillRunning)
        .arg(skippedFiles);
}

ImportSummary importDatabases(storage::RunStore& store, const QStringList& paths)
{
    QStringList files;
    for (const QString& path : paths)
        files << databaseFiles(path);
    ImportSummary summary;
    for (const QString& file : files) {
        if (QFileInfo(file).absoluteFilePath() == store.path())
            continue; // the run database itself may lie in the directory
        FileImport item;
        item.file = file;
        try {
            item.result = store.importRuns(file);
            summary.total.imported += item.result.imported;
            summary.total.alreadyPresent += item.result.alreadyPresent;
            summary.total.stillRunning += item.result.stillRunning;
            for (const QString& sweep : item.result.sweeps)
                if (!summary.total.sweeps.contains(sweep))
                    summary.total.sweeps << sweep;
        } catch (const storage::StorageError& error) {
            ++summary.skippedFiles;
            item.skipped = QString::fromLocal8Bit(error.what());
        }
        summary.files << item;
    }
    return summary;
}

} // namespace mantissa::sweep
