// Databases the CLI must refuse before training (a file that is not SQLite, a schema
// newer than the build, a read-only directory, a lock held past the timeout): exit code
// 2, a message naming the file, and the file unchanged. And a disk that fills up while
// training: the run stops, ends "failed" with the message, exit code 1.
#include "cli_test_support.h"
#include "storage/run_store.h"
#include "test_support.h"

#include <QDir>
#include <QFile>
#include <QScopeGuard>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

using namespace mantissa;
using namespace mantissa::cli::test;
using mantissa::storage::test::FileSnapshot;
using mantissa::storage::test::snapshot;

namespace {

void writeFile(const QString& path, const QByteArray& bytes)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    QCOMPARE(file.write(bytes), bytes.size());
}

} // namespace

class CliDatabaseTest : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_config = writeTinyConfig(m_dir.path());
        QVERIFY(!m_config.isEmpty());
    }

    void refusesFileThatIsNotSqlite_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::newRow("train") << QStringList{QStringLiteral("train"), m_config, QStringLiteral("--max-steps"),
                                              QStringLiteral("2")};
        QTest::newRow("compare") << QStringList{QStringLiteral("compare"), m_config, QStringLiteral("--precisions"),
                                                QStringLiteral("fp32,bf16")};
        QTest::newRow("runs") << QStringList{QStringLiteral("runs")};
        QTest::newRow("show") << QStringList{QStringLiteral("show"), QStringLiteral("1")};
        QTest::newRow("delete") << QStringList{QStringLiteral("delete"), QStringLiteral("1")};
    }
    void refusesFileThatIsNotSqlite()
    {
        QFETCH(QStringList, arguments);
        const QString db = m_dir.filePath(QStringLiteral("notes.txt"));
        writeFile(db, "run,loss\nmlp,0.25\n");
        const FileSnapshot before = snapshot(db);
        const CliResult r = runCli(arguments + QStringList{QStringLiteral("--db"), db});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(db + QStringLiteral(": is not an SQLite database")), qPrintable(r.describe()));
        QVERIFY(snapshot(db) == before);
        QVERIFY(!QFile::exists(db + QStringLiteral("-wal")));
        QVERIFY(r.out.isEmpty());
    }

    void refusesNewerSchema()
    {
        const QString db = m_dir.filePath(QStringLiteral("newer.sqlite"));
        {
            storage::RunStore store(db);
        }
        {
            storage::test::RawDatabase raw(db);
            QVERIFY(raw.exec(QStringLiteral("PRAGMA user_version = 99")));
        }
        const FileSnapshot before = snapshot(db);
        const CliResult r = runCli({QStringLiteral("train"), m_config, QStringLiteral("--db"), db});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(db + QStringLiteral(": database schema version 99 is newer")),
                 qPrintable(r.describe()));
        QVERIFY(snapshot(db) == before);
    }

    void refusesReadOnlyDirectory()
    {
        storage::test::ReadOnlyDirectory directory =
            storage::test::readOnlyDirectory(m_dir.filePath(QStringLiteral("read-only")));
        if (directory.path.isEmpty())
            QSKIP("no way to make a directory read-only here: running as root, chattr +i failed and /proc accepts "
                  "new files");
        const QString db = QDir(directory.path).filePath(QStringLiteral("runs.sqlite"));
        if (directory.canHoldDatabase) {
            const CliResult first = runCli({QStringLiteral("train"), m_config, QStringLiteral("--max-steps"),
                                            QStringLiteral("2"), QStringLiteral("--db"), db});
            QVERIFY2(first.exitCode == 0, qPrintable(first.describe()));
        }
        directory.makeReadOnly();
        auto restore = qScopeGuard(directory.restore);
        const FileSnapshot before = snapshot(db);
        const CliResult r = runCli({QStringLiteral("train"), m_config, QStringLiteral("--db"), db});
        qInfo("read-only directory by %s: %s", qPrintable(directory.technique), qPrintable(r.err.trimmed()));
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(QStringLiteral("mantissa-cli train: ") + db + QStringLiteral(": ")),
                 qPrintable(r.describe()));
        QVERIFY(snapshot(db) == before);
    }

    // Another connection holds the write lock for longer than the busy timeout (5 s):
    // creating the run gives up with a message, before any training.
    void refusesDatabaseLockedPastTheTimeout()
    {
        const QString db = m_dir.filePath(QStringLiteral("locked.sqlite"));
        {
            storage::RunStore store(db);
        }
        storage::test::RawDatabase raw(db);
        QVERIFY(raw.exec(QStringLiteral("BEGIN IMMEDIATE")));
        auto release = qScopeGuard([&] { raw.exec(QStringLiteral("ROLLBACK")); });
        const CliResult r = runCli({QStringLiteral("train"), m_config, QStringLiteral("--db"), db});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(db) && r.err.contains(QStringLiteral("lock")), qPrintable(r.describe()));
        QVERIFY(r.out.isEmpty());
    }

    // A full disk, made with RLIMIT_FSIZE (prlimit) and SIGXFSZ ignored, so that writes
    // past the limit fail instead of killing the process: the writer fails mid-run, the
    // trainer stops, the run ends failed with the message, and the committed rows stay.
    void fullDiskStopsTheRunAsFailed()
    {
        const QString prlimit = QStandardPaths::findExecutable(QStringLiteral("prlimit"));
        if (prlimit.isEmpty())
            QSKIP("prlimit (util-linux) is not installed, so a file size limit cannot be set");
        const QString db = m_dir.filePath(QStringLiteral("full.sqlite"));
        {
            storage::RunStore store(db);
        } // created outside the limit
        const QString config = writeTinyConfig(m_dir.path(), {QStringLiteral("long"), 1000, 4096, 256, {}});
        const QString script = QStringLiteral("trap '' XFSZ; exec \"$0\" --fsize=300000 \"$@\"");
        const CliResult r =
            runProgram(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), script, prlimit, cliPath(),
                                                   QStringLiteral("train"), config, QStringLiteral("--db"), db});
        QVERIFY2(r.exitCode == 1, qPrintable(r.describe()));
        const QJsonObject line = r.json();
        QCOMPARE(line.value(QStringLiteral("status")).toString(), QStringLiteral("failed"));
        QVERIFY2(line.value(QStringLiteral("message")).toString().startsWith(db + QStringLiteral(": ")),
                 qPrintable(r.describe()));
        const qint64 id = line.value(QStringLiteral("run_id")).toInteger();

        storage::RunStore store(db);
        const storage::RunInfo run = store.run(id);
        // The writer marks the run failed in the space the rolled-back rows left; should
        // even that update not fit, the run is left running and reopening marks it
        // interrupted. Either way nothing claims it finished.
        QVERIFY2(run.status == storage::RunStatus::Failed || run.status == storage::RunStatus::Interrupted,
                 runStatusName(run.status));
        if (run.status == storage::RunStatus::Failed)
            QVERIFY2(run.errorMessage.startsWith(db + QStringLiteral(": ")), qPrintable(run.errorMessage));
        const storage::StepSeries steps = store.steps(id);
        QVERIFY(!steps.isEmpty());
        QCOMPARE(steps.step.last(), double(steps.size())); // 1..n, no gaps
        QVERIFY(qint64(steps.size()) < line.value(QStringLiteral("steps")).toInteger() + 1);
    }

private:
    QTemporaryDir m_dir;
    QString m_config;
};

QTEST_GUILESS_MAIN(CliDatabaseTest)
#include "cli_database_test.moc"
