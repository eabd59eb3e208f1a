#pragma once
// Internal: the model_files table (schema version 10). An imported model's run keeps the bytes
// of the file it trained, once per content, keyed by their SHA-256, so that runs of one model
// share one copy and a run can be trained again after its file moved or changed.
#include <QByteArray>
#include <QString>

namespace mantissa::storage {

class Connection;

// The hex SHA-256 of `bytes`.
QString modelFileHash(const QByteArray& bytes);
// Stores `bytes` unless a file of that content is stored already; returns its hash.
QString storeModelFile(const Connection& connection, const QByteArray& bytes);
// The stored bytes of `sha256`; StorageError NotFound when none are stored.
QByteArray readModelFile(const Connection& connection, const QString& sha256);
// Removes the stored bytes of `sha256` once no run refers to them.
void deleteUnusedModelFile(const Connection& connection, const QString& sha256);
// Importing runs: copies the attached database "src"'s model files this one lacks.
void copyModelFiles(const Connection& connection);

} // namespace mantissa::storage
