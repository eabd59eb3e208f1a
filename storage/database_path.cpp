#include "storage/database_path.h"

#include "storage/storage_error.h"

#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

namespace mantissa::storage {

QString defaultDatabasePath()
{
    // AppDataLocation depends on the QCoreApplication's organization and application
    // names, which an application embedding the workbench sets to its own. The run
    // database is Mantissa's, so build the same path from the generic location with
    // Mantissa's names instead of the host's.
    const QString base = QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation);
    return QDir(base).filePath(QStringLiteral("Mantissa/mantissa/runs.sqlite"));
}

QString resolveDatabasePath(const QString& cliOption)
{
    QString path = cliOption;
    if (path.isEmpty())
        path = qEnvironmentVariable("MANTISSA_DB");
    if (path.isEmpty())
        path = defaultDatabasePath();
    const QFileInfo info(path);
    const QString absolute = info.absoluteFilePath();
    const QString directory = info.absolutePath();
    if (!QDir().mkpath(directory)) {
        throw StorageError(StorageError::Kind::ReadOnly, absolute,
                           QStringLiteral("cannot create the directory %1 for the run database; "
                                          "choose another file with --db or MANTISSA_DB")
                               .arg(directory));
    }
    return absolute;
}

} // namespace mantissa::storage
