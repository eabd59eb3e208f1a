// A training process that dies (kill -9) or is interrupted (Ctrl-C) through the CLI:
// after SIGKILL every row committed before the kill is still there, unchanged, and `show`
// reports the run interrupted;
// after SIGINT the run stops at a step boundary, finishes "stopped" and exits 0.
#include "cli_test_support.h"
#include "storage/run_store.h"
#include "test_support.h"

#include <QDeadlineTimer>
#include <QSqlQuery>
#include <QSqlRecord>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <memory>

using namespace mantissa;
using namespace mantissa::cli::test;

namespace {

// A QProcess that a failed test does not leave running.
struct ProcessKiller {
    void operator()(QProcess* process) const
    {
        if (process->state() != QProcess::NotRunning) {
            process->kill();
            process->waitForFinished();
        }
        delete process;
    }
};
using Process = std::unique_ptr<QProcess, ProcessKiller>;

// Starts `mantissa-cli train` on a run far too long to finish during the test.
Process startLongRun(const QString& config, const QString& db)
{
    Process process(new QProcess);
    process->setProcessEnvironment(cliEnvironment());
    process->start(cliPath(), {QStringLiteral("train"), config, QStringLiteral("--db"), db});
    process->waitForStarted();
    return process;
}

// Waits for the "run N (...)" line, then until the database holds at least `steps`
// committed steps of run N (the writer commits about once a second). Returns N, or 0.
qint64 waitForCommittedSteps(QProcess& process, const QString& db, qsizetype steps)
{
    QString err;
    qint64 id = 0;
    QDeadlineTimer deadline(60000);
    while (!deadline.hasExpired() && process.state() == QProcess::Running) {
        if (id == 0) {
            process.waitForReadyRead(100);
            err += QString::fromUtf8(process.readAllStandardError());
            id = runIdFromStderr(err);
            continue;
        }
        if (storage::RunStore(db).steps(id).size() >= steps)
            return id;
        QTest::qWait(100);
    }
    qWarning("no committed steps; stderr so far:\n%s", qPrintable(err));
    return 0;
}

// The per-run tables a writer appends to, each with the order of its primary key.
const QList<std::pair<QString, QString>> kRunTables = {
    {QStringLiteral("steps"), QStringLiteral("step")},
    {QStringLiteral("epochs"), QStringLiteral("epoch")},
    {QStringLiteral("events"), QStringLiteral("id")},
    {QStringLiteral("numerics_steps"), QStringLiteral("step")},
    {QStringLiteral("numerics_tensors"), QStringLiteral("step, layer_index, kind, tensor")},
};

// What a reader sees committed for run `id` in one table: every row, every column, as text
// (doubles with 17 digits, so a changed bit shows; NULL apart from any value).
QStringList committedRows(const QString& db, const QString& table, const QString& order, qint64 id)
{
    storage::test::RawDatabase raw(db);
    QSqlQuery query(raw.database());
    query.prepare(QStringLiteral("SELECT * FROM %1 WHERE run_id = ? ORDER BY %2").arg(table, order));
    query.addBindValue(id);
    QStringList rows;
    if (!query.exec())
        return {QStringLiteral("cannot read %1").arg(table)};
    while (query.next()) {
        QStringList columns;
        for (int c = 0; c < query.record().count(); ++c) {
            const QVariant v = query.value(c);
            columns << (v.isNull()                        ? QStringLiteral("NULL")
                        : v.typeId() == QMetaType::Double ? QString::number(v.toDouble(), 'g', 17)
                                                          : v.toString());
        }
        rows << columns.join(QLatin1Char('|'));
    }
    return rows;
}

// Empty when every row of `before` is still the same row at the same place of `after`;
// otherwise the first row lost or changed.
QString lostOrChanged(const QString& table, const QStringList& before, const QStringList& after)
{
    for (qsizetype i = 0; i < before.size(); ++i) {
        if (i >= after.size())
            return QStringLiteral("%1: row %2 of %3 committed before the kill is gone: %4")
                .arg(table)
                .arg(i)
                .arg(before.size())
                .arg(before[i]);
        if (after[i] != before[i])
            return QStringLiteral("%1: row %2 changed after the kill:\n before %3\n after  %4")
                .arg(table)
                .arg(i)
                .arg(before[i], after[i]);
    }
    return {};
}

QJsonObject lastJsonLine(const QByteArray& out)
{
    CliResult parsed;
    parsed.out = QString::fromUtf8(out);
    return parsed.json();
}

} // namespace

class CliKillTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        // 1024 steps per epoch, 1000 epochs: minutes of training, killed after a second or two.
        m_config = writeTinyConfig(m_dir.path(), {QStringLiteral("long"), 1000, 32768, 256, {}});
        QVERIFY(!m_config.isEmpty());
    }

    void killedRunIsInterruptedWithItsCommittedSteps()
    {
        const QString db = m_dir.filePath(QStringLiteral("killed.sqlite"));
        auto process = startLongRun(m_config, db);
        const qint64 id = waitForCommittedSteps(*process, db, 1);
        QVERIFY(id > 0);
        // What was committed just before the kill; the writer may commit more before the
        // signal lands, so after the kill these rows must lead every table, unchanged.
        QMap<QString, QStringList> before;
        for (const auto& [table, order] : kRunTables)
            before[table] = committedRows(db, table, order, id);
        process->kill(); // SIGKILL: no handler, no destructor, no final commit
        QVERIFY(process->waitForFinished(10000));
        QCOMPARE(process->exitStatus(), QProcess::CrashExit);
        QVERIFY(!before[QStringLiteral("steps")].isEmpty());

        // The first open after the death (here the CLI's) marks the run interrupted.
        const CliResult show = runCli({QStringLiteral("show"), QString::number(id), QStringLiteral("--db"), db});
        QVERIFY2(show.exitCode == 0, qPrintable(show.describe()));
        QVERIFY2(showField(show.out, QStringLiteral("status")) == QStringLiteral("interrupted"), qPrintable(show.out));
        for (const auto& [table, order] : kRunTables) {
            const QString problem = lostOrChanged(table, before[table], committedRows(db, table, order, id));
            QVERIFY2(problem.isEmpty(), qPrintable(problem));
        }

        storage::RunStore store(db);
        const storage::StepSeries steps = store.steps(id);
        QVERIFY(steps.size() >= 1);
        QCOMPARE(steps.step.first(), 1.0);
        QCOMPARE(steps.step.last(), double(steps.size())); // every committed step, no gaps
        const storage::RunInfo run = store.run(id);
        QCOMPARE(run.status, storage::RunStatus::Interrupted);
        QCOMPARE(run.summary.steps, std::optional<qint64>(steps.size()));
        QVERIFY2(showField(show.out, QStringLiteral("steps")).startsWith(QStringLiteral("%1 (").arg(steps.size())),
                 qPrintable(show.out));
    }

    void ctrlCStopsTheRunAndKeepsEveryStep()
    {
        const QString db = m_dir.filePath(QStringLiteral("stopped.sqlite"));
        auto process = startLongRun(m_config, db);
        const qint64 id = waitForCommittedSteps(*process, db, 1);
        QVERIFY(id > 0);
        QCOMPARE(::kill(pid_t(process->processId()), SIGINT), 0);
        QVERIFY(process->waitForFinished(30000));
        QCOMPARE(process->exitStatus(), QProcess::NormalExit);
        QCOMPARE(process->exitCode(), 0);
        const QJsonObject line = lastJsonLine(process->readAllStandardOutput());
        QCOMPARE(line.value(QStringLiteral("status")).toString(), QStringLiteral("stopped"));
        QCOMPARE(line.value(QStringLiteral("run_id")).toInteger(), id);

        storage::RunStore store(db);
        const storage::RunInfo run = store.run(id);
        QCOMPARE(run.status, storage::RunStatus::Stopped);
        QCOMPARE(run.summary.steps, std::optional<qint64>(line.value(QStringLiteral("steps")).toInteger()));
        QCOMPARE(qint64(store.steps(id).size()), line.value(QStringLiteral("steps")).toInteger());
    }

private:
    QTemporaryDir m_dir;
    QString m_config;
};

QTEST_GUILESS_MAIN(CliKillTest)
#include "cli_kill_test.moc"
