#include "storage/storage_error.h"

namespace mantissa::storage {

static QString prefixed(const QString& path, const QString& problem)
{
    return path.isEmpty() ? problem : path + QStringLiteral(": ") + problem;
}

StorageError::StorageError(Kind kind, const QString& path, const QString& problem)
    : Error(prefixed(path, problem).toStdString()), m_kind(kind), m_path(path), m_message(prefixed(path, problem))
{}

const char* storageErrorKindName(StorageError::Kind kind)
{
    using K = StorageError::Kind;
    switch (kind) {
    case K::NotFound: return "not_found";
    case K::ReadOnly: return "read_only";
    case K::NotSqlite: return "not_sqlite";
    case K::NotMantissa: return "not_mantissa";
    case K::Corrupt: return "corrupt";
    case K::TooNew: return "too_new";
    case K::Locked: return "locked";
    case K::DiskFull: return "disk_full";
    case K::InvalidArgument: return "invalid_argument";
    case K::Io: return "io";
    case K::Sql: return "sql";
    }
    return "?";
}

} // namespace mantissa::storage
