#include "storage/database_file.h"

#include "storage/storage_error.h"

#include <QFile>
#include <QFileInfo>

namespace mantissa::storage {

namespace {

const QString kChooseAnother = QStringLiteral("choose another file with --db or MANTISSA_DB");

void checkDirectory(const QString& path)
{
    const QFileInfo directory(QFileInfo(path).absolutePath());
    if (!directory.isDir()) {
        throw StorageError(StorageError::Kind::NotFound, path,
                           QStringLiteral("the directory %1 does not exist; create it or %2")
                               .arg(directory.filePath(), kChooseAnother));
    }
    // WAL mode keeps two companion files (-wal, -shm) next to the database, so even an
    // existing database needs a writable directory.
    if (!directory.isWritable()) {
        throw StorageError(StorageError::Kind::ReadOnly, path,
                           QStringLiteral("the directory %1 is not writable (the database and "
                                          "its -wal and -shm files live there); %2")
                               .arg(directory.filePath(), kChooseAnother));
    }
}

} // namespace

bool hasSqliteHeader(const QString& path)
{
    static const QByteArray header("SQLite format 3\0", 16);
    QFile file(path);
    return file.open(QIODevice::ReadOnly) && file.read(header.size()) == header;
}

void checkDatabaseFile(const QString& path, bool readHeader)
{
    if (path.isEmpty())
        throw StorageError(StorageError::Kind::InvalidArgument, path, QStringLiteral("no database path given"));
    checkDirectory(path);
    const QFileInfo file(path);
    if (!file.exists())
        return; // a new database
    if (file.isDir()) {
        throw StorageError(StorageError::Kind::NotSqlite, path,
                           QStringLiteral("is a directory, not a database file; %1").arg(kChooseAnother));
    }
    if (!file.isReadable()) {
        throw StorageError(StorageError::Kind::Io, path, QStringLiteral("cannot be read (permission denied)"));
    }
    // SQLite treats an empty file as an empty database; anything else must carry the header.
    if (readHeader && file.size() > 0 && !hasSqliteHeader(path)) {
        throw StorageError(StorageError::Kind::NotSqlite, path,
                           QStringLiteral("is not an SQLite database (it does not start with "
                                          "\"SQLite format 3\"); it was left untouched; %1")
                               .arg(kChooseAnother));
    }
    if (!file.isWritable()) {
        throw StorageError(StorageError::Kind::ReadOnly, path,
                           QStringLiteral("is read-only; make it writable or %1").arg(kChooseAnother));
    }
}

} // namespace mantissa::storage
