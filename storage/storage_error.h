#pragma once
// The one error type of Mantissa::storage. Every failure a user can cause (a bad path, a
// file that is not ours, a locked or full disk, an unknown run) is thrown as StorageError;
// its message names the file or the run and, where there is one, suggests a fix. The
// single exception to "throw" is RunWriter's observer callbacks, which must not unwind
// through the trainer: they record the error instead (RunWriter::failed()).
#include "engine/util/check.h"

#include <QString>

namespace mantissa::storage {

class StorageError : public Error {
public:
    enum class Kind {
        NotFound,        // missing directory, unknown run or group
        ReadOnly,        // the directory or file cannot be written
        NotSqlite,       // the file exists but is not an SQLite database
        NotMantissa,     // an SQLite database that belongs to another application
        Corrupt,         // PRAGMA quick_check failed or SQLite reported corruption
        TooNew,          // schema version newer than this build knows
        Locked,          // another connection held the lock past the busy timeout
        DiskFull,        // SQLITE_FULL: no space left (or a size limit) while writing
        InvalidArgument, // a bad name, tag or status
        Io,              // other I/O failures (checkpoint files, directories)
        Sql,             // any other SQLite failure
    };

    // The message is "PATH: PROBLEM" so that every error names its file.
    StorageError(Kind kind, const QString& path, const QString& problem);

    Kind kind() const { return m_kind; }
    const QString& path() const { return m_path; }       // the database or file concerned
    const QString& message() const { return m_message; } // "PATH: PROBLEM", == what()

private:
    Kind m_kind;
    QString m_path;
    QString m_message;
};

// "not_found", "read_only", ...: stable names for logs and tests.
const char* storageErrorKindName(StorageError::Kind kind);

} // namespace mantissa::storage
