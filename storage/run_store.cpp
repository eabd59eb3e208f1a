#include "storage/run_store.h"

#include "storage/connection.h"
#include "storage/db_values.h"
#include "storage/model_files.h"
#include "storage/process_liveness.h"
#include "storage/run_recovery.h"
#include "storage/run_sql.h"
#include "storage/schema.h"
#include "storage/storage_error.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>

namespace mantissa::storage {

namespace {

// "Mixed FP16" -> "mixed-fp16": names must be easy to type on a command line.
QString slug(const QString& text)
{
    static const QRegularExpression separators(QStringLiteral("[^a-z0-9._]+"));
    QString result = text.toLower().replace(separators, QStringLiteral("-"));
    while (result.startsWith(u'-'))
        result.remove(0, 1);
    while (result.endsWith(u'-'))
        result.chop(1);
    return result;
}

// "<preset>-<precision>-<n>" with n one past the largest n already used for that prefix,
// so a deleted run's name is not handed to a new, different run.
QString generatedName(const Connection& connection, const NewRun& run)
{
    QString prefix = slug(run.preset);
    if (prefix.isEmpty())
        prefix = QStringLiteral("run");
    if (const QString precision = slug(run.precision); !precision.isEmpty())
        prefix += u'-' + precision;
    prefix += u'-';
    QSqlQuery query = connection.prepare(
        QStringLiteral("SELECT substr(name, :length + 1) FROM runs WHERE substr(name, 1, :length) = :prefix"));
    query.bindValue(QStringLiteral(":length"), prefix.size());
    query.bindValue(QStringLiteral(":prefix"), prefix);
    connection.exec(query, QStringLiteral("generating a run name"));
    qint64 largest = 0;
    while (query.next()) {
        bool isNumber = false;
        const qint64 n = query.value(0).toString().toLongLong(&isNumber);
        if (isNumber && n > largest)
            largest = n;
    }
    return prefix + QString::number(largest + 1);
}

void requireUniqueName(const Connection& connection, const QString& name, qint64 exceptRunId)
{
    QSqlQuery query = connection.prepare(QStringLiteral("SELECT id FROM runs WHERE name = ? AND id != ?"));
    query.addBindValue(name);
    query.addBindValue(exceptRunId);
    connection.exec(query, QStringLiteral("checking the run name"));
    if (query.next()) {
        throw StorageError(StorageError::Kind::InvalidArgument, connection.path(),
                           QStringLiteral("a run named \"%1\" already exists (id %2); choose another name")
                               .arg(name)
                               .arg(query.value(0).toLongLong()));
    }
}

void insertTag(const Connection& connection, qint64 runId, const QString& tag)
{
    QSqlQuery query = connection.prepare(QStringLiteral("INSERT OR IGNORE INTO run_tags (run_id, tag) VALUES (?, ?)"));
    query.addBindValue(runId);
    query.addBindValue(checkedTag(connection.path(), tag));
    connection.exec(query, QStringLiteral("tagging run %1").arg(runId));
}

} // namespace

RunStore::RunStore(const QString& path, const StoreOptions& options)
    : m_connection(std::make_unique<Connection>(path, options.busyTimeoutMs))
{
    prepareDatabase(*m_connection, options.quickCheck ? IntegrityCheck::Quick : IntegrityCheck::Skip);
    try {
        markInterruptedRuns();
    } catch (const StorageError& error) {
        // Another writer holding the lock must not keep the database from opening for
        // reading; the next open marks the runs instead.
        if (error.kind() != StorageError::Kind::Locked)
            throw;
    }
}

RunStore::~RunStore() = default;

QString RunStore::path() const { return m_connection->path(); }

QString RunStore::directory() const { return QFileInfo(m_connection->path()).absolutePath(); }

QString RunStore::checkpointDirectory(qint64 runId) const
{
    const QFileInfo file(m_connection->path());
    return QDir(file.absolutePath())
        .filePath(QStringLiteral("%1-checkpoints/run-%2").arg(file.completeBaseName()).arg(runId));
}

int RunStore::schemaVersion() { return kSchemaVersion; }

QString RunStore::modelFilePath(const RunInfo& run) const
{
    if (run.modelSha256.isEmpty())
        throw StorageError(StorageError::Kind::InvalidArgument, path(),
                           QStringLiteral("run \"%1\" trained a layer list, not a model file").arg(run.name));
    QFile source(run.modelSource);
    if (source.open(QIODevice::ReadOnly) && modelFileHash(source.readAll()) == run.modelSha256)
        return QFileInfo(run.modelSource).absoluteFilePath();
    const QFileInfo database(m_connection->path());
    const QDir models(database.absoluteDir().filePath(database.completeBaseName() + QStringLiteral("-models")));
    const QString copyPath = models.filePath(run.modelSha256 + QStringLiteral(".onnx"));
    QFile copy(copyPath);
    if (copy.open(QIODevice::ReadOnly) && modelFileHash(copy.readAll()) == run.modelSha256)
        return copyPath;
    copy.close();
    const QByteArray bytes = readModelFile(*m_connection, run.modelSha256);
    if (!QDir().mkpath(models.path()) || !copy.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
        copy.write(bytes) != bytes.size() || !copy.flush())
        throw StorageError(
            StorageError::Kind::Io, copyPath,
            QStringLiteral("cannot write run \"%1\"'s model file: %2").arg(run.name, copy.errorString()));
    return copyPath;
}

int RunStore::markInterruptedRuns() { return storage::markInterruptedRuns(*m_connection); }

qint64 RunStore::createRun(const NewRun& run)
{
    const Connection& c = *m_connection;
    Transaction transaction(c, QStringLiteral("creating a run"));
    QString name;
    if (run.name.trimmed().isEmpty()) {
        name = generatedName(c, run);
    } else {
        name = checkedRunName(c.path(), run.name);
        requireUniqueName(c, name, 0);
    }
    if (run.groupId)
        requireGroup(*run.groupId);
    if (run.sweepId)
        requireSweep(*run.sweepId);
    if (run.parent && run.parent->runId)
        requireRun(*run.parent->runId);
    const WriterIdentity writer = currentWriterIdentity();
    QSqlQuery insert = c.prepare(
        QStringLiteral("INSERT INTO runs (name, status, created_at, config_json, preset, precision, device, "
                       "kernels, engine_version, notes, group_id, writer_pid, writer_host, writer_boot, "
                       "writer_start, heartbeat_at, uid, sweep_id, sweep_index, world_size, data_fingerprint, "
                       "model_source, model_sha256, parent_run_id, parent_step) "
                       "VALUES (?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
    const QString now = nowDbTime();
    const QString uid = run.uid.isEmpty() ? newUid() : run.uid;
    const QString modelSha256 = run.modelSource.isEmpty() ? QString() : storeModelFile(c, run.modelBytes);
    for (const QVariant& value : {QVariant(name),
                                  QVariant(now),
                                  text(run.configJson),
                                  text(run.preset),
                                  text(run.precision),
                                  text(run.device),
                                  text(run.kernels),
                                  text(run.engineVersion),
                                  text(run.notes),
                                  nullable(run.groupId),
                                  QVariant(writer.pid),
                                  QVariant(writer.host),
                                  QVariant(writer.boot),
                                  QVariant(writer.startTicks),
                                  QVariant(now),
                                  QVariant(uid),
                                  nullable(run.sweepId),
                                  nullable(run.sweepIndex),
                                  QVariant(std::max(1, run.worldSize)),
                                  dataColumn(run.dataFingerprint, run.dataPreparation),
                                  run.modelSource.isEmpty() ? QVariant() : QVariant(run.modelSource),
                                  modelSha256.isEmpty() ? QVariant() : QVariant(modelSha256),
                                  run.parent ? nullable(run.parent->runId) : QVariant(),
                                  run.parent ? QVariant(run.parent->step) : QVariant()}) {
        insert.addBindValue(value);
    }
    c.exec(insert, QStringLiteral("creating run \"%1\"").arg(name));
    const qint64 id = insert.lastInsertId().toLongLong();
    for (const QString& tag : run.tags)
        insertTag(c, id, tag);
    transaction.commit();
    return id;
}

void RunStore::finishRun(qint64 runId, const RunSummary& summary)
{
    if (summary.status == RunStatus::Running) {
        throw StorageError(StorageError::Kind::InvalidArgument, path(),
                           QStringLiteral("run %1 cannot finish with status \"running\"").arg(runId));
    }
    requireRun(runId);
    QSqlQuery update = m_connection->prepare(finishRunSql());
    const FinishedRow row = finishedRow(summary);
    Transaction transaction(*m_connection, QStringLiteral("finishing run %1").arg(runId));
    bindFinish(update, runId, row);
    m_connection->exec(update, QStringLiteral("finishing run %1").arg(runId));
    writeRanks(*m_connection, runId, row.ranks);
    transaction.commit();
}

void RunStore::renameRun(qint64 runId, const QString& newName)
{
    const Connection& c = *m_connection;
    const QString name = checkedRunName(c.path(), newName);
    Transaction transaction(c, QStringLiteral("renaming run %1").arg(runId));
    requireRun(runId);
    requireUniqueName(c, name, runId);
    QSqlQuery update = c.prepare(QStringLiteral("UPDATE runs SET name = ? WHERE id = ?"));
    update.addBindValue(name);
    update.addBindValue(runId);
    c.exec(update, QStringLiteral("renaming run %1").arg(runId));
    transaction.commit();
}

void RunStore::setRunText(qint64 runId, const char* column, const QString& value, const QString& what)
{
    requireRun(runId);
    // `column` is one of this file's literals, never user input.
    QSqlQuery update =
        m_connection->prepare(QStringLiteral("UPDATE runs SET %1 = ? WHERE id = ?").arg(QLatin1String(column)));
    update.addBindValue(text(value));
    update.addBindValue(runId);
    m_connection->exec(update, what);
}

void RunStore::setKernels(qint64 runId, const QString& kernels)
{
    setRunText(runId, "kernels", kernels, QStringLiteral("recording the kernels of run %1").arg(runId));
}

void RunStore::setNotes(qint64 runId, const QString& notes)
{
    setRunText(runId, "notes", notes, QStringLiteral("setting the notes of run %1").arg(runId));
}

void RunStore::addTag(qint64 runId, const QString& tag)
{
    requireRun(runId);
    insertTag(*m_connection, runId, tag);
}

void RunStore::removeTag(qint64 runId, const QString& tag)
{
    requireRun(runId);
    QSqlQuery remove = m_connection->prepare(QStringLiteral("DELETE FROM run_tags WHERE run_id = ? AND tag = ?"));
    remove.addBindValue(runId);
    remove.addBindValue(tag.trimmed());
    m_connection->exec(remove, QStringLiteral("removing a tag from run %1").arg(runId));
}

QStringList RunStore::deleteRun(qint64 runId)
{
    const RunInfo info = run(runId);
    if (info.status == RunStatus::Running && isRunWriterAlive(*m_connection, runId)) {
        throw StorageError(StorageError::Kind::InvalidArgument, path(),
                           QStringLiteral("run \"%1\" is still being written by process %2 on %3; "
                                          "stop it before deleting it")
                               .arg(info.name)
                               .arg(info.writerPid)
                               .arg(info.writerHost));
    }
    const QList<CheckpointInfo> files = checkpoints(runId);
    // Rows first (steps, epochs, events, tags and checkpoints cascade), files after: a
    // failure in between leaves files without rows, never rows that point at nothing.
    QSqlQuery remove = m_connection->prepare(QStringLiteral("DELETE FROM runs WHERE id = ?"));
    remove.addBindValue(runId);
    m_connection->exec(remove, QStringLiteral("deleting run \"%1\"").arg(info.name));
    if (!info.modelSha256.isEmpty())
        deleteUnusedModelFile(*m_connection, info.modelSha256);
    QStringList notRemoved;
    for (const CheckpointInfo& checkpoint : files) {
        QFile file(checkpoint.absolutePath);
        if (file.exists() && !file.remove())
            notRemoved << checkpoint.absolutePath;
    }
    QDir().rmdir(checkpointDirectory(runId)); // only when empty: files not removed stay listed
    return notRemoved;
}

qint64 RunStore::addCheckpoint(qint64 runId, const QString& filePath, qint64 step, int epoch)
{
    requireRun(runId);
    QSqlQuery insert = m_connection->prepare(
        QStringLiteral("INSERT INTO checkpoints (run_id, path, step, epoch, created_at) VALUES (?, ?, ?, ?, ?)"));
    for (const QVariant& value : {QVariant(runId), QVariant(storedCheckpointPath(directory(), filePath)),
                                  QVariant(step), QVariant(epoch), QVariant(nowDbTime())}) {
        insert.addBindValue(value);
    }
    m_connection->exec(insert, QStringLiteral("recording a checkpoint of run %1").arg(runId));
    return insert.lastInsertId().toLongLong();
}

qint64 RunStore::createGroup(const QString& name)
{
    const QString trimmed = name.trimmed();
    if (trimmed.isEmpty()) {
        throw StorageError(StorageError::Kind::InvalidArgument, path(),
                           QStringLiteral("a comparison group needs a name"));
    }
    QSqlQuery insert =
        m_connection->prepare(QStringLiteral("INSERT INTO comparison_groups (name, created_at) VALUES (?, ?)"));
    insert.addBindValue(trimmed);
    insert.addBindValue(nowDbTime());
    m_connection->exec(insert, QStringLiteral("creating comparison group \"%1\"").arg(trimmed));
    return insert.lastInsertId().toLongLong();
}

void RunStore::setRunGroup(qint64 runId, std::optional<qint64> groupId)
{
    requireRun(runId);
    if (groupId)
        requireGroup(*groupId);
    QSqlQuery update = m_connection->prepare(QStringLiteral("UPDATE runs SET group_id = ? WHERE id = ?"));
    update.addBindValue(nullable(groupId));
    update.addBindValue(runId);
    m_connection->exec(update, QStringLiteral("setting the group of run %1").arg(runId));
}

void RunStore::requireRun(qint64 runId) const
{
    QSqlQuery query = m_connection->prepare(QStringLiteral("SELECT 1 FROM runs WHERE id = ?"));
    query.addBindValue(runId);
    m_connection->exec(query, QStringLiteral("looking up run %1").arg(runId));
    if (!query.next()) {
        throw StorageError(StorageError::Kind::NotFound, path(),
                           QStringLiteral("there is no run with id %1").arg(runId));
    }
}

void RunStore::requireGroup(qint64 groupId) const
{
    QSqlQuery query = m_connection->prepare(QStringLiteral("SELECT 1 FROM comparison_groups WHERE id = ?"));
    query.addBindValue(groupId);
    m_connection->exec(query, QStringLiteral("looking up comparison group %1").arg(groupId));
    if (!query.next()) {
        throw StorageError(StorageError::Kind::NotFound, path(),
                           QStringLiteral("there is no comparison group with id %1").arg(groupId));
    }
}

} // namespace mantissa::storage
