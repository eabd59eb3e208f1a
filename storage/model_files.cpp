#include "storage/model_files.h"

#include "storage/connection.h"
#include "storage/storage_error.h"

#include <QCryptographicHash>
#include <QSqlQuery>
#include <QVariant>

namespace mantissa::storage {

QString modelFileHash(const QByteArray& bytes)
{
    return QString::fromLatin1(QCryptographicHash::hash(bytes, QCryptographicHash::Sha256).toHex());
}

QString storeModelFile(const Connection& connection, const QByteArray& bytes)
{
    const QString sha256 = modelFileHash(bytes);
    QSqlQuery insert = connection.prepare(
        QStringLiteral("INSERT OR IGNORE INTO model_files (sha256, size_bytes, bytes) VALUES (?, ?, ?)"));
    insert.addBindValue(sha256);
    insert.addBindValue(static_cast<qint64>(bytes.size()));
    insert.addBindValue(bytes);
    connection.exec(insert, QStringLiteral("storing the model file %1").arg(sha256));
    return sha256;
}

QByteArray readModelFile(const Connection& connection, const QString& sha256)
{
    QSqlQuery query = connection.prepare(QStringLiteral("SELECT bytes FROM model_files WHERE sha256 = ?"));
    query.addBindValue(sha256);
    connection.exec(query, QStringLiteral("reading the model file %1").arg(sha256));
    if (!query.next())
        throw StorageError(StorageError::Kind::NotFound, connection.path(),
                           QStringLiteral("holds no model file with SHA-256 %1").arg(sha256));
    return query.value(0).toByteArray();
}

void deleteUnusedModelFile(const Connection& connection, const QString& sha256)
{
    QSqlQuery remove = connection.prepare(QStringLiteral(
        "DELETE FROM model_files WHERE sha256 = ? AND NOT EXISTS (SELECT 1 FROM runs WHERE model_sha256 = ?)"));
    remove.addBindValue(sha256);
    remove.addBindValue(sha256);
    connection.exec(remove, QStringLiteral("removing the unused model file %1").arg(sha256));
}

void copyModelFiles(const Connection& connection)
{
    connection.exec(QStringLiteral("INSERT OR IGNORE INTO main.model_files SELECT sha256, size_bytes, bytes FROM "
                                   "src.model_files"),
                    QStringLiteral("importing the model files"));
}

} // namespace mantissa::storage
