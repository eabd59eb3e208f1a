#pragma once
// Internal: checks made on a database path before SQLite touches it, so that a file that
// is not ours is never opened for writing (SQLite would happily turn an empty or foreign
// file into a database) and a missing or read-only directory gets a clear message.
#include <QString>

namespace mantissa::storage {

// Throws StorageError: NotFound (no such directory), NotSqlite (wrong header, a
// directory), ReadOnly (a file or directory we may not write), Io (unreadable).
// readHeader false skips reading the file (only stat checks): for a database this process
// already has open, see Connection.
void checkDatabaseFile(const QString& path, bool readHeader = true);

// The 16 bytes every SQLite 3 database starts with.
bool hasSqliteHeader(const QString& path);

} // namespace mantissa::storage
