// Crash safety: a run whose writer was killed with SIGKILL is marked "interrupted" by the
// next process that opens the database, every committed row intact; a run whose writer
// is alive is left alone. The liveness rules are checked on hand-made run rows too.
#include "storage/process_liveness.h"
#include "storage/run_store.h"
#include "storage/storage_error.h"
#include "test_support.h"

#include <QProcess>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>

using namespace mantissa;
using namespace mantissa::storage;
using namespace mantissa::storage::test;

namespace {

// The PID of a process that has exited and been reaped.
qint64 deadPid()
{
    QProcess process;
    process.start(QStringLiteral("true"), {});
    process.waitForStarted();
    const qint64 pid = process.processId();
    process.waitForFinished();
    return pid;
}

} // namespace

class CrashRecoveryTest : public QObject {
    Q_OBJECT

private slots:
    void init()
    {
        m_dir = std::make_unique<QTemporaryDir>();
        QVERIFY(m_dir->isValid());
        m_path = m_dir->filePath(QStringLiteral("runs.sqlite"));
    }
    void cleanup() { m_dir.reset(); }

    void killedWriterLeavesInterruptedRun_data()
    {
        QTest::addColumn<int>("runMs"); // how long the child writes before SIGKILL
        QTest::newRow("0.3 s") << 300;
        QTest::newRow("1.2 s") << 1200;
        QTest::newRow("2.1 s") << 2100;
    }
    void killedWriterLeavesInterruptedRun()
    {
        QFETCH(int, runMs);
        QProcess child;
        child.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        child.start(QStringLiteral(MANTISSA_CRASH_WRITER), {m_path});
        QVERIFY2(child.waitForStarted(), qPrintable(child.errorString()));
        QVERIFY2(child.waitForReadyRead(10000), "the crash writer did not start writing");
        const QByteArray ready = child.readLine().trimmed();
        QVERIFY2(ready.startsWith("ready "), ready.constData());
        const qint64 runId = ready.mid(6).toLongLong();

        QTest::qWait(runMs);
        qint64 seenBeforeKill = 0;
        {
            // Opening the database while the writer lives must not mark its run.
            RunStore store(m_path);
            QCOMPARE(store.run(runId).status, RunStatus::Running);
            QCOMPARE(store.run(runId).writerPid, child.processId());
            seenBeforeKill = store.steps(runId).size();
        }
        QVERIFY(seenBeforeKill >= 1);
        child.kill(); // SIGKILL: no destructor, no rollback, no last commit
        QVERIFY(child.waitForFinished(10000));
        QCOMPARE(child.exitStatus(), QProcess::CrashExit);

        RunStore store(m_path); // runs PRAGMA quick_check as well
        const RunInfo run = store.run(runId);
        QCOMPARE(run.status, RunStatus::Interrupted);
        QVERIFY2(run.errorMessage.contains(QStringLiteral("PID %1").arg(run.writerPid)), qPrintable(run.errorMessage));
        QVERIFY(run.finishedAt.isValid());
        const StepSeries steps = store.steps(runId);
        QVERIFY(steps.size() >= seenBeforeKill);
        QString why;
        QVERIFY2(isIntactPrefix(steps, &why), qPrintable(why));
        QCOMPARE(run.summary.steps, std::optional<qint64>(steps.size()));
        QCOMPARE(run.wallSeconds, std::optional<double>(steps.elapsedSeconds.back()));
        // Epochs and events were committed with the steps before them. Each commits as it comes,
        // after the step it follows, and the kill can land between that step's commit and its
        // own (the epoch and the event of step 200000 are two commits): the one at the last
        // committed step may be missing, every earlier one must be there.
        const qint64 last = steps.size();
        const auto committedUpTo = [last](qint64 count, qint64 every) {
            return count == last / every || (last % every == 0 && count == last / every - 1);
        };
        const QList<EpochRecord> epochs = store.epochs(runId);
        QVERIFY2(committedUpTo(epochs.size(), 100000),
                 qPrintable(QStringLiteral("%1 epochs after %2 steps").arg(epochs.size()).arg(last)));
        for (const EpochRecord& epoch : epochs)
            QCOMPARE(epoch.trainLoss, makeEpoch(epoch.epoch).trainLoss);
        const qint64 events = store.events(runId).size();
        QVERIFY2(committedUpTo(events, 50000),
                 qPrintable(QStringLiteral("%1 events after %2 steps").arg(events).arg(last)));
        qInfo("killed after %d ms: %lld steps committed (%lld seen while alive)", runMs, qint64(steps.size()),
              seenBeforeKill);
        QCOMPARE(store.markInterruptedRuns(), 0); // done once, on open
    }

    // Hand-made "running" rows with writers in every state.
    void judgesWriterLiveness_data()
    {
        QTest::addColumn<qint64>("pid");
        QTest::addColumn<QString>("host");
        QTest::addColumn<QString>("boot");
        QTest::addColumn<qint64>("startDelta"); // added to this process's start time
        QTest::addColumn<int>("heartbeatAgeSeconds");
        QTest::addColumn<bool>("interrupted");
        const WriterIdentity self = currentWriterIdentity();
        QTest::newRow("this process") << self.pid << self.host << self.boot << qint64(0) << 5 << false;
        QTest::newRow("this process, old heartbeat (paused)")
            << self.pid << self.host << self.boot << qint64(0) << 86400 << false;
        QTest::newRow("dead process") << deadPid() << self.host << self.boot << qint64(0) << 5 << true;
        QTest::newRow("reused PID") << self.pid << self.host << self.boot << qint64(-100) << 5 << true;
        QTest::newRow("before a reboot") << self.pid << self.host << QStringLiteral("another-boot") << qint64(0) << 5
                                         << true;
        QTest::newRow("no writer recorded") << qint64(0) << QString() << QString() << qint64(0) << 5 << true;
        QTest::newRow("other host, recent heartbeat")
            << qint64(1) << QStringLiteral("elsewhere") << QString() << qint64(0) << 60 << false;
        QTest::newRow("other host, stale heartbeat")
            << qint64(1) << QStringLiteral("elsewhere") << QString() << qint64(0) << 7200 << true;
    }
    void judgesWriterLiveness()
    {
        QFETCH(qint64, pid);
        QFETCH(QString, host);
        QFETCH(QString, boot);
        QFETCH(qint64, startDelta);
        QFETCH(int, heartbeatAgeSeconds);
        QFETCH(bool, interrupted);
        qint64 runId = 0;
        {
            RunStore store(m_path);
            runId = store.createRun(sampleRun());
        }
        {
            RawDatabase db(m_path);
            QSqlQuery update(db.database());
            update.prepare(QStringLiteral("UPDATE runs SET writer_pid = ?, writer_host = ?, writer_boot = ?, "
                                          "writer_start = writer_start + ?, heartbeat_at = ? WHERE id = ?"));
            update.addBindValue(pid == 0 ? QVariant() : QVariant(pid));
            update.addBindValue(host);
            update.addBindValue(boot);
            update.addBindValue(startDelta);
            update.addBindValue(
                QDateTime::currentDateTimeUtc().addSecs(-heartbeatAgeSeconds).toString(Qt::ISODateWithMs));
            update.addBindValue(runId);
            QVERIFY(update.exec());
        }
        RunStore store(m_path);
        QCOMPARE(store.run(runId).status, interrupted ? RunStatus::Interrupted : RunStatus::Running);
    }

private:
    std::unique_ptr<QTemporaryDir> m_dir;
    QString m_path;
};

QTEST_GUILESS_MAIN(CrashRecoveryTest)
#include "crash_recovery_test.moc"
