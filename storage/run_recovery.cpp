#include "storage/run_recovery.h"

#include "storage/connection.h"
#include "storage/db_values.h"
#include "storage/process_liveness.h"

#include <QList>

namespace mantissa::storage {

namespace {

struct RunningRun {
    qint64 id = 0;
    WriterIdentity writer;
    QVariant heartbeat; // as stored, to detect a writer that moved on since we looked
};

const QString kWriterColumns = QStringLiteral("id, writer_pid, writer_host, writer_boot, writer_start, heartbeat_at");

RunningRun readRunningRun(const QSqlQuery& query)
{
    RunningRun run;
    run.id = query.value(0).toLongLong();
    run.writer.pid = query.value(1).toLongLong();
    run.writer.host = query.value(2).toString();
    run.writer.boot = query.value(3).toString();
    run.writer.startTicks = query.value(4).toLongLong();
    run.heartbeat = query.value(5);
    return run;
}

bool isAlive(const RunningRun& run) { return isWriterAlive(run.writer, fromDbTime(run.heartbeat)); }

QList<RunningRun> deadRuns(const Connection& connection)
{
    QSqlQuery query =
        connection.exec(QStringLiteral("SELECT %1 FROM runs WHERE status = 'running'").arg(kWriterColumns),
                        QStringLiteral("looking for interrupted runs"));
    QList<RunningRun> dead;
    while (query.next()) {
        const RunningRun run = readRunningRun(query);
        if (!isAlive(run))
            dead << run;
    }
    return dead;
}

QString interruptionMessage(const RunningRun& run)
{
    if (run.writer.pid <= 0)
        return QStringLiteral("the run was left running by a writer that recorded no process id; "
                              "its committed rows are kept");
    return QStringLiteral("the process writing this run (PID %1 on %2) ended without finishing it; "
                          "its committed rows are kept")
        .arg(run.writer.pid)
        .arg(run.writer.host);
}

} // namespace

int markInterruptedRuns(const Connection& connection)
{
    const QList<RunningRun> dead = deadRuns(connection);
    if (dead.isEmpty())
        return 0; // the common case takes no write lock
    Transaction transaction(connection, QStringLiteral("marking interrupted runs"));
    // The summary comes from the committed steps; the last heartbeat is the best estimate
    // of when the writer died. The WHERE clause skips a run whose writer wrote again
    // since we looked (then it is alive after all).
    QSqlQuery update = connection.prepare(
        QStringLiteral("UPDATE runs SET status = 'interrupted', finished_at = COALESCE(heartbeat_at, created_at), "
                       "error_message = :message, "
                       "steps = (SELECT MAX(step) FROM steps WHERE run_id = runs.id), "
                       "skipped_steps = (SELECT COUNT(*) FROM steps WHERE run_id = runs.id AND skipped), "
                       "wall_seconds = (SELECT MAX(elapsed_seconds) FROM steps WHERE run_id = runs.id) "
                       "WHERE id = :id AND status = 'running' AND heartbeat_at IS :heartbeat"));
    int marked = 0;
    for (const RunningRun& run : dead) {
        update.bindValue(QStringLiteral(":message"), interruptionMessage(run));
        update.bindValue(QStringLiteral(":id"), run.id);
        update.bindValue(QStringLiteral(":heartbeat"), run.heartbeat);
        connection.exec(update, QStringLiteral("marking run %1 interrupted").arg(run.id));
        marked += update.numRowsAffected();
    }
    transaction.commit();
    return marked;
}

bool isRunWriterAlive(const Connection& connection, qint64 runId)
{
    QSqlQuery query = connection.prepare(QStringLiteral("SELECT %1 FROM runs WHERE id = ?").arg(kWriterColumns));
    query.addBindValue(runId);
    connection.exec(query, QStringLiteral("reading the writer of run %1").arg(runId));
    return query.next() && isAlive(readRunningRun(query));
}

} // namespace mantissa::storage
