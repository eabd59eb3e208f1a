#include "storage/connection.h"

#include "storage/database_file.h"
#include "storage/storage_error.h"

#include <QFileInfo>
#include <QSqlError>

#include <QHash>

#include <atomic>
#include <mutex>

namespace mantissa::storage {

namespace {

// SQLite primary result codes (sqlite3.h); QSqlError::nativeErrorCode() carries them.
enum SqliteCode {
    kBusy = 5,
    kLocked = 6,
    kReadOnly = 8,
    kIoErr = 10,
    kCorrupt = 11,
    kFull = 13,
    kCantOpen = 14,
    kNotADb = 26,
};

QString uniqueConnectionName()
{
    static std::atomic<quint64> counter{0};
    return QStringLiteral("mantissa-storage-%1").arg(++counter);
}

// How many Connections of this process have each database open (any thread).
std::mutex g_openMutex;
QHash<QString, int> g_openCounts;

void countOpen(const QString& path, int delta)
{
    const std::lock_guard lock(g_openMutex);
    if ((g_openCounts[path] += delta) <= 0)
        g_openCounts.remove(path);
}

} // namespace

Connection::Connection(const QString& path, int busyTimeoutMs)
    : m_name(uniqueConnectionName()), m_path(QFileInfo(path).absoluteFilePath()), m_busyTimeoutMs(busyTimeoutMs)
{
    // The header was read when the first connection opened it; reading it again would drop
    // that connection's locks (isOpenInProcess). Measured: four processes each opening a
    // second connection lost the WAL under them within a few runs (SQLITE_IOERR_SHORT_READ).
    checkDatabaseFile(m_path, !isOpenInProcess(m_path));
    m_db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), m_name);
    if (!m_db.isValid()) {
        throw StorageError(StorageError::Kind::Sql, m_path,
                           QStringLiteral("the Qt SQLite driver (QSQLITE) is not available; "
                                          "install libqt6sql6-sqlite"));
    }
    m_db.setDatabaseName(m_path);
    if (!m_db.open())
        throw error(m_db.lastError(), QStringLiteral("opening the database"));
    exec(QStringLiteral("PRAGMA busy_timeout = %1").arg(busyTimeoutMs), QStringLiteral("setting the busy timeout"));
    countOpen(m_path, +1);
    m_counted = true;
}

Connection::~Connection()
{
    m_db.close();
    m_db = QSqlDatabase(); // removeDatabase() wants the last handle gone
    QSqlDatabase::removeDatabase(m_name);
    if (m_counted)
        countOpen(m_path, -1);
}

bool Connection::isOpenInProcess(const QString& absolutePath)
{
    const std::lock_guard lock(g_openMutex);
    return g_openCounts.contains(absolutePath);
}

QSqlQuery Connection::prepare(const QString& sql) const
{
    QSqlQuery query(m_db);
    if (!query.prepare(sql))
        throw error(query.lastError(), QStringLiteral("preparing \"%1\"").arg(sql.left(60)));
    return query;
}

void Connection::exec(QSqlQuery& query, const QString& what) const
{
    if (!query.exec())
        throw error(query.lastError(), what);
}

QSqlQuery Connection::exec(const QString& sql, const QString& what) const
{
    QSqlQuery query(m_db);
    query.setForwardOnly(true);
    if (!query.exec(sql))
        throw error(query.lastError(), what);
    return query;
}

QVariant Connection::scalar(const QString& sql, const QString& what) const
{
    QSqlQuery query = exec(sql, what);
    return query.next() ? query.value(0) : QVariant();
}

StorageError Connection::error(const QSqlError& sqlError, const QString& what) const
{
    using K = StorageError::Kind;
    const QString detail = sqlError.databaseText().isEmpty() ? sqlError.text() : sqlError.databaseText();
    switch (sqlError.nativeErrorCode().toInt()) {
    case kBusy:
    case kLocked:
        return StorageError(K::Locked, m_path,
                            QStringLiteral("the database stayed locked by another connection for "
                                           "more than %1 ms while %2; close the program holding it "
                                           "(another Mantissa, or sqlite3 inside a transaction) and "
                                           "try again")
                                .arg(m_busyTimeoutMs)
                                .arg(what));
    case kFull:
        return StorageError(K::DiskFull, m_path,
                            QStringLiteral("the disk is full while %1 (%2); free some space and "
                                           "try again")
                                .arg(what, detail));
    case kReadOnly:
    case kCantOpen:
        return StorageError(K::ReadOnly, m_path,
                            QStringLiteral("cannot write the database while %1 (%2); check that "
                                           "the file and its directory are writable, or choose "
                                           "another file with --db or MANTISSA_DB")
                                .arg(what, detail));
    case kCorrupt:
    case kNotADb:
        return StorageError(K::Corrupt, m_path,
                            QStringLiteral("the database is corrupt (%1) while %2; restore it from "
                                           "a backup (Mantissa does not modify it)")
                                .arg(detail, what));
    case kIoErr: return StorageError(K::Io, m_path, QStringLiteral("I/O error while %1 (%2)").arg(what, detail));
    default: return StorageError(K::Sql, m_path, QStringLiteral("SQLite error while %1: %2").arg(what, detail));
    }
}

Transaction::Transaction(const Connection& connection, const QString& what) : m_connection(connection), m_what(what)
{
    connection.exec(QStringLiteral("BEGIN IMMEDIATE"), what);
}

Transaction::~Transaction()
{
    if (m_open) {
        QSqlQuery rollback(m_connection.database());
        rollback.exec(QStringLiteral("ROLLBACK")); // may fail if SQLite already rolled back
    }
}

void Transaction::commit()
{
    m_connection.exec(QStringLiteral("COMMIT"), m_what);
    m_open = false;
}

} // namespace mantissa::storage
