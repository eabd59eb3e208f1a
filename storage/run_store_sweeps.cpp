// RunStore's sweeps and the import of other run databases (the per-task files of a Slurm
// job array). The import runs in SQL over an ATTACHed source, one transaction, so a failure
// half-way adds nothing.
#include "storage/model_files.h"
#include "storage/run_store.h"

#include "storage/connection.h"
#include "storage/database_file.h"
#include "storage/db_values.h"
#include "storage/run_sql.h"
#include "storage/storage_error.h"

#include <QDir>
#include <QFileInfo>
#include <QSet>

namespace mantissa::storage {

namespace {

const QString kSweepColumns = QStringLiteral("id, uid, name, spec_json, run_count, created_at");

SweepInfo readSweep(const QSqlQuery& q)
{
    SweepInfo sweep;
    sweep.id = q.value(0).toLongLong();
    sweep.uid = q.value(1).toString();
    sweep.name = q.value(2).toString();
    sweep.specJson = q.value(3).toString();
    sweep.runCount = q.value(4).toInt();
    sweep.createdAt = fromDbTime(q.value(5));
    return sweep;
}

QList<SweepInfo> readSweeps(const Connection& c, QSqlQuery& query, const QString& what)
{
    c.exec(query, what);
    QList<SweepInfo> sweeps;
    while (query.next())
        sweeps << readSweep(query);
    return sweeps;
}

// The columns of `table` in the main database, less `excluded`: the source has the same
// schema (it was migrated on open), so these name the same columns on both sides.
QStringList columnsOf(const Connection& c, const QString& table, const QSet<QString>& excluded)
{
    QSqlQuery query = c.exec(QStringLiteral("PRAGMA main.table_info(%1)").arg(table),
                             QStringLiteral("reading the columns of %1").arg(table));
    QStringList columns;
    while (query.next()) {
        const QString name = query.value(1).toString();
        if (!excluded.contains(name))
            columns << name;
    }
    return columns;
}

// The source's sweep `sourceSweepId` in this database (created when its uid is new here).
qint64 mappedSweep(const Connection& c, qint64 sourceSweepId, ImportResult& result)
{
    QSqlQuery source = c.prepare(QStringLiteral("SELECT %1 FROM src.sweeps WHERE id = ?").arg(kSweepColumns));
    source.addBindValue(sourceSweepId);
    c.exec(source, QStringLiteral("reading sweep %1 of the source").arg(sourceSweepId));
    if (!source.next())
        return 0;
    const SweepInfo sweep = readSweep(source);
    QSqlQuery existing = c.prepare(QStringLiteral("SELECT id FROM main.sweeps WHERE uid = ?"));
    existing.addBindValue(sweep.uid);
    c.exec(existing, QStringLiteral("looking up sweep %1").arg(sweep.uid));
    if (existing.next())
        return existing.value(0).toLongLong();
    QSqlQuery insert = c.prepare(
        QStringLiteral("INSERT INTO main.sweeps (uid, name, spec_json, run_count, created_at) VALUES (?, ?, ?, ?, ?)"));
    for (const QVariant& value : {QVariant(sweep.uid), QVariant(sweep.name), QVariant(sweep.specJson),
                                  QVariant(sweep.runCount), QVariant(toDbTime(sweep.createdAt))})
        insert.addBindValue(value);
    c.exec(insert, QStringLiteral("creating sweep \"%1\"").arg(sweep.name));
    result.sweeps << sweep.name;
    return insert.lastInsertId().toLongLong();
}

// `name`, or "name-2", "name-3", ... when a run here already has it (two task files each
// hold a run that the generator named "mlp-fp32-1").
QString freeName(const Connection& c, const QString& name)
{
    QSqlQuery query = c.prepare(QStringLiteral("SELECT 1 FROM main.runs WHERE name = ?"));
    QString candidate = name;
    for (int n = 2;; ++n) {
        query.bindValue(0, candidate);
        c.exec(query, QStringLiteral("checking the run name \"%1\"").arg(candidate));
        if (!query.next())
            return candidate;
        candidate = QStringLiteral("%1-%2").arg(name).arg(n);
    }
}

void copyRows(const Connection& c, const QString& table, const QStringList& columns, qint64 newId, qint64 oldId)
{
    const QString list = columns.join(QStringLiteral(", "));
    QSqlQuery copy = c.prepare(QStringLiteral("INSERT INTO main.%1 (run_id, %2) SELECT ?, %2 FROM src.%1 WHERE "
                                              "run_id = ?")
                                   .arg(table, list));
    copy.addBindValue(newId);
    copy.addBindValue(oldId);
    c.exec(copy, QStringLiteral("importing the %1 of run %2").arg(table).arg(oldId));
}

// Checkpoint paths are stored relative to their database's directory; the imported rows
// point at the source's files, relative to this database where they lie beneath it.
// An imported fork's parent by its uid: the parent's id here, when the parent is here (imported
// before it, or already present); else none, and the fork keeps only its parent step.
void linkImportedFork(const Connection& c, qint64 newId, qint64 oldId)
{
    QSqlQuery link = c.prepare(QStringLiteral(
        "UPDATE main.runs SET parent_run_id = (SELECT m.id FROM main.runs m JOIN src.runs p ON p.uid = m.uid "
        "JOIN src.runs f ON f.parent_run_id = p.id WHERE f.id = ?) WHERE id = ?"));
    link.addBindValue(oldId);
    link.addBindValue(newId);
    c.exec(link, QStringLiteral("linking imported run %1 to its parent").arg(newId));
}

void copyCheckpoints(const Connection& c, qint64 newId, qint64 oldId, const QString& sourceDir, const QString& ownDir)
{
    QSqlQuery source =
        c.prepare(QStringLiteral("SELECT path, step, epoch, created_at FROM src.checkpoints WHERE run_id = ?"));
    source.addBindValue(oldId);
    c.exec(source, QStringLiteral("reading the checkpoints of run %1").arg(oldId));
    QSqlQuery insert = c.prepare(
        QStringLiteral("INSERT INTO main.checkpoints (run_id, path, step, epoch, created_at) VALUES (?, ?, ?, ?, ?)"));
    while (source.next()) {
        const QString absolute = QDir(sourceDir).absoluteFilePath(source.value(0).toString());
        for (const QVariant& value : {QVariant(newId), QVariant(storedCheckpointPath(ownDir, absolute)),
                                      source.value(1), source.value(2), source.value(3)})
            insert.addBindValue(value);
        c.exec(insert, QStringLiteral("importing a checkpoint of run %1").arg(oldId));
    }
}

// Detaches the source whatever happens; DETACH fails inside a transaction, so this object
// must outlive the Transaction.
class Attachment {
public:
    Attachment(const Connection& c, const QString& path) : m_connection(c)
    {
        QSqlQuery attach = c.prepare(QStringLiteral("ATTACH DATABASE ? AS src"));
        attach.addBindValue(path);
        c.exec(attach, QStringLiteral("attaching %1").arg(path));
    }
    ~Attachment() { QSqlQuery(m_connection.database()).exec(QStringLiteral("DETACH DATABASE src")); }
    Attachment(const Attachment&) = delete;
    Attachment& operator=(const Attachment&) = delete;

private:
    const Connection& m_connection;
};

} // namespace

qint64 RunStore::createSweep(const NewSweep& sweep)
{
    if (sweep.name.trimmed().isEmpty() || sweep.runCount < 1) {
        throw StorageError(StorageError::Kind::InvalidArgument, path(),
                           QStringLiteral("a sweep needs a name and at least one run"));
    }
    QSqlQuery insert = m_connection->prepare(
        QStringLiteral("INSERT INTO sweeps (uid, name, spec_json, run_count, created_at) VALUES (?, ?, ?, ?, ?)"));
    for (const QVariant& value : {QVariant(sweep.uid.isEmpty() ? newUid() : sweep.uid), QVariant(sweep.name.trimmed()),
                                  QVariant(sweep.specJson), QVariant(sweep.runCount), QVariant(nowDbTime())})
        insert.addBindValue(value);
    m_connection->exec(insert, QStringLiteral("creating sweep \"%1\"").arg(sweep.name));
    return insert.lastInsertId().toLongLong();
}

SweepInfo RunStore::sweep(qint64 sweepId) const
{
    QSqlQuery query = m_connection->prepare(QStringLiteral("SELECT %1 FROM sweeps WHERE id = ?").arg(kSweepColumns));
    query.addBindValue(sweepId);
    const QList<SweepInfo> found = readSweeps(*m_connection, query, QStringLiteral("reading sweep %1").arg(sweepId));
    if (found.isEmpty())
        throw StorageError(StorageError::Kind::NotFound, path(), QStringLiteral("there is no sweep %1").arg(sweepId));
    return found.front();
}

std::optional<SweepInfo> RunStore::findSweep(const QString& uid) const
{
    QSqlQuery query = m_connection->prepare(QStringLiteral("SELECT %1 FROM sweeps WHERE uid = ?").arg(kSweepColumns));
    query.addBindValue(uid);
    const QList<SweepInfo> found = readSweeps(*m_connection, query, QStringLiteral("finding sweep %1").arg(uid));
    return found.isEmpty() ? std::nullopt : std::optional(found.front());
}

std::optional<SweepInfo> RunStore::findSweepBySpec(const QString& specJson) const
{
    QSqlQuery query = m_connection->prepare(
        QStringLiteral("SELECT %1 FROM sweeps WHERE spec_json = ? ORDER BY id DESC LIMIT 1").arg(kSweepColumns));
    query.addBindValue(specJson);
    const QList<SweepInfo> found = readSweeps(*m_connection, query, QStringLiteral("finding a sweep by its spec"));
    return found.isEmpty() ? std::nullopt : std::optional(found.front());
}

QList<SweepInfo> RunStore::sweeps() const
{
    QSqlQuery query =
        m_connection->prepare(QStringLiteral("SELECT %1 FROM sweeps ORDER BY id DESC").arg(kSweepColumns));
    return readSweeps(*m_connection, query, QStringLiteral("listing sweeps"));
}

QList<RunInfo> RunStore::sweepRuns(qint64 sweepId) const
{
    requireSweep(sweepId);
    RunFilter filter;
    filter.sweepId = sweepId;
    QList<RunInfo> runs = listRuns(filter);
    std::stable_sort(runs.begin(), runs.end(), [](const RunInfo& a, const RunInfo& b) {
        return std::pair(a.sweepIndex.value_or(-1), a.id) < std::pair(b.sweepIndex.value_or(-1), b.id);
    });
    return runs;
}

void RunStore::requireSweep(qint64 sweepId) const
{
    QSqlQuery query = m_connection->prepare(QStringLiteral("SELECT 1 FROM sweeps WHERE id = ?"));
    query.addBindValue(sweepId);
    m_connection->exec(query, QStringLiteral("looking up sweep %1").arg(sweepId));
    if (!query.next())
        throw StorageError(StorageError::Kind::NotFound, path(), QStringLiteral("there is no sweep %1").arg(sweepId));
}

ImportResult RunStore::importRuns(const QString& sourcePath)
{
    const QFileInfo source(sourcePath);
    const QString sourceFile = source.absoluteFilePath();
    if (sourceFile == path()) {
        throw StorageError(StorageError::Kind::InvalidArgument, sourceFile,
                           QStringLiteral("is the run database itself; nothing to import"));
    }
    if (!source.exists())
        throw StorageError(StorageError::Kind::NotFound, sourceFile, QStringLiteral("does not exist"));
    if (source.isFile() && source.size() == 0)
        throw StorageError(StorageError::Kind::NotSqlite, sourceFile,
                           QStringLiteral("is an empty file, not a run database"));
    // Read only when no connection here has it open (Connection::isOpenInProcess).
    if (!Connection::isOpenInProcess(sourceFile) && !hasSqliteHeader(sourceFile)) {
        checkDatabaseFile(sourceFile); // names what is wrong: missing, a directory, unreadable
        throw StorageError(StorageError::Kind::NotSqlite, sourceFile, QStringLiteral("is not an SQLite database"));
    }
    {
        // Refuses foreign, corrupt and newer files unchanged; migrates an older one forward
        // (so both sides have the same columns) and marks runs whose writer died interrupted.
        RunStore checked(sourceFile);
    }

    const Connection& c = *m_connection;
    const Attachment attachment(c, sourceFile);
    Transaction transaction(c, QStringLiteral("importing %1").arg(sourceFile));
    // Runs recorded before schema version 5 have no uid: give them one in the source, so that
    // the next import recognises them.
    c.exec(QStringLiteral("UPDATE src.runs SET uid = lower(hex(randomblob(16))) WHERE uid IS NULL"),
           QStringLiteral("giving the source's runs an id"));

    copyModelFiles(c); // before the runs that refer to them
    const QStringList runColumns =
        columnsOf(c, QStringLiteral("runs"), {"id", "name", "group_id", "sweep_id", "parent_run_id"});
    const QString runList = runColumns.join(QStringLiteral(", "));
    QSqlQuery insertRun = c.prepare(QStringLiteral("INSERT INTO main.runs (name, sweep_id, %1) SELECT ?, ?, %1 FROM "
                                                   "src.runs WHERE id = ?")
                                        .arg(runList));
    const std::pair<QString, QSet<QString>> childTables[] = {
        {QStringLiteral("steps"), {"run_id"}},
        {QStringLiteral("epochs"), {"run_id"}},
        {QStringLiteral("events"), {"run_id", "id"}},
        {QStringLiteral("run_tags"), {"run_id"}},
        {QStringLiteral("numerics_steps"), {"run_id"}},
        {QStringLiteral("numerics_tensors"), {"run_id"}},
        {QStringLiteral("numerics_gemm_inputs"), {"run_id"}},
        {QStringLiteral("run_ranks"), {"run_id"}},
        {QStringLiteral("shadow_steps"), {"run_id"}},
        {QStringLiteral("shadow_errors"), {"run_id"}},
    };
    QList<std::pair<QString, QStringList>> children;
    for (const auto& [table, excluded] : childTables)
        children.append({table, columnsOf(c, table, excluded)});

    ImportResult result;
    QSqlQuery runs = c.exec(QStringLiteral("SELECT id, uid, name, status, sweep_id, "
                                           "EXISTS (SELECT 1 FROM main.runs m WHERE m.uid = src.runs.uid) "
                                           "FROM src.runs ORDER BY id"),
                            QStringLiteral("listing the source's runs"));
    QList<QVariantList> rows;
    while (runs.next())
        rows.append({runs.value(0), runs.value(1), runs.value(2), runs.value(3), runs.value(4), runs.value(5)});
    QHash<qint64, qint64> sweepIds;
    for (const QVariantList& row : rows) {
        const qint64 oldId = row[0].toLongLong();
        if (row[5].toBool()) {
            ++result.alreadyPresent;
            continue;
        }
        if (row[3].toString() == QLatin1String(runStatusName(RunStatus::Running))) {
            ++result.stillRunning;
            continue;
        }
        QVariant sweepId;
        if (!row[4].isNull()) {
            const qint64 sourceSweep = row[4].toLongLong();
            if (!sweepIds.contains(sourceSweep))
                sweepIds.insert(sourceSweep, mappedSweep(c, sourceSweep, result));
            if (const qint64 mapped = sweepIds.value(sourceSweep))
                sweepId = mapped;
        }
        insertRun.bindValue(0, freeName(c, row[2].toString()));
        insertRun.bindValue(1, sweepId);
        insertRun.bindValue(2, oldId);
        c.exec(insertRun, QStringLiteral("importing run %1").arg(row[2].toString()));
        const qint64 newId = insertRun.lastInsertId().toLongLong();
        linkImportedFork(c, newId, oldId);
        for (const auto& [table, columns] : children)
            copyRows(c, table, columns, newId, oldId);
        copyCheckpoints(c, newId, oldId, source.absolutePath(), directory());
        ++result.imported;
    }
    transaction.commit();
    return result;
}

} // namespace mantissa::storage
