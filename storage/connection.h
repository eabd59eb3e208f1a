#pragma once
// Internal: one QSqlDatabase connection to a run database, opened after the file checks
// (database_file.h), with SQLite errors turned into StorageError. QSqlDatabase
// connections belong to the thread that opened them, so each RunStore and RunWriter owns
// one under a process-unique name and uses it on that thread only.
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QString>

namespace mantissa::storage {

class StorageError;

class Connection {
public:
    // Throws StorageError when the file is not a database we may open or SQLite refuses it.
    Connection(const QString& path, int busyTimeoutMs);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    const QString& path() const { return m_path; }
    int busyTimeoutMs() const { return m_busyTimeoutMs; }
    QSqlDatabase database() const { return m_db; }

    // Each throws StorageError naming the file and `what` was being done.
    QSqlQuery prepare(const QString& sql) const;
    void exec(QSqlQuery& query, const QString& what) const;
    QSqlQuery exec(const QString& sql, const QString& what) const;  // positioned before row 1
    QVariant scalar(const QString& sql, const QString& what) const; // row 1, column 1

    StorageError error(const QSqlError& error, const QString& what) const;

    // Whether a Connection of this process has `absolutePath` open. Code that would open
    // and close that file itself must not while one has: closing any descriptor of a file
    // drops every POSIX lock this process holds on it, SQLite's included, and another
    // process may then take the database for unused and delete the WAL under us.
    static bool isOpenInProcess(const QString& absolutePath);

private:
    QString m_name;
    QString m_path;
    int m_busyTimeoutMs;
    QSqlDatabase m_db;
    bool m_counted = false;
};

// BEGIN IMMEDIATE ... COMMIT, rolled back when destroyed uncommitted (an exception).
// IMMEDIATE takes the write lock up front: a deferred transaction that reads first and
// writes later can fail with SQLITE_BUSY without waiting, in WAL mode.
class Transaction {
public:
    Transaction(const Connection& connection, const QString& what);
    ~Transaction();
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit();

private:
    const Connection& m_connection;
    QString m_what;
    bool m_open = true;
};

} // namespace mantissa::storage
