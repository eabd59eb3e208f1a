// Bad situations: each gets a typed StorageError naming the file, and no data is lost or
// overwritten: a file that is not SQLite or not ours, a corrupt file, a missing or
// read-only directory, a database locked past the timeout, a disk that fills up.
#include "storage/run_store.h"
#include "storage/run_writer.h"
#include "storage/storage_error.h"
#include "test_support.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QScopeGuard>
#include <QTemporaryDir>
#include <QTest>

using namespace mantissa;
using namespace mantissa::storage;
using namespace mantissa::storage::test;

namespace {

StorageError::Kind openError(const QString& path, QString* message = nullptr)
{
    try {
        RunStore store(path);
    } catch (const StorageError& error) {
        if (message)
            *message = error.message();
        return error.kind();
    }
    return StorageError::Kind(-1);
}

void writeFile(const QString& path, const QByteArray& bytes)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    QCOMPARE(file.write(bytes), bytes.size());
}

// A database with a finished run of `steps` rows, closed (its WAL checkpointed away).
qint64 buildDatabase(const QString& path, int steps)
{
    RunStore store(path);
    const qint64 id = store.createRun(sampleRun());
    RunWriter writer(path, id);
    for (int n = 1; n <= steps; ++n)
        writer.onStep(makeStep(n));
    writer.finish(finishedSummary());
    return id;
}

} // namespace

class FailureTest : public QObject {
    Q_OBJECT

private slots:
    void init()
    {
        QVERIFY(m_dir.isValid());
        m_path = m_dir.filePath(QStringLiteral("runs.sqlite"));
    }
    void cleanup()
    {
        for (const QString& suffix : {QString(), QStringLiteral("-wal"), QStringLiteral("-shm")})
            QFile::remove(m_path + suffix);
    }

    void refusesFileThatIsNotSqlite_data()
    {
        QTest::addColumn<QByteArray>("content");
        QTest::newRow("text") << QByteArray("name,loss\nmlp,0.25\n");
        QTest::newRow("shorter than the header") << QByteArray("SQLite");
        QTest::newRow("SQLite 2") << QByteArray("** This file contains an SQLite 2.1 database **");
        QTest::newRow("PNG") << QByteArray("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16);
        QTest::newRow("header without NUL") << QByteArray("SQLite format 3!and more bytes follow");
    }
    void refusesFileThatIsNotSqlite()
    {
        QFETCH(QByteArray, content);
        writeFile(m_path, content);
        const FileSnapshot before = snapshot(m_path);
        QString message;
        QCOMPARE(openError(m_path, &message), StorageError::Kind::NotSqlite);
        QVERIFY2(message.startsWith(m_path + QStringLiteral(": is not an SQLite database")), qPrintable(message));
        QVERIFY(snapshot(m_path) == before);
        QVERIFY(!QFile::exists(m_path + QStringLiteral("-wal")));
    }

    void refusesDirectoryAsFile()
    {
        QVERIFY(QDir().mkpath(m_path));
        QCOMPARE(openError(m_path), StorageError::Kind::NotSqlite);
        QDir(m_path).removeRecursively();
    }

    void refusesAnotherApplicationsDatabase_data()
    {
        QTest::addColumn<QString>("sql");
        QTest::newRow("foreign tables") << QStringLiteral("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)");
        QTest::newRow("foreign application id") << QStringLiteral("PRAGMA application_id = 1234");
    }
    void refusesAnotherApplicationsDatabase()
    {
        QFETCH(QString, sql);
        {
            RawDatabase db(m_path);
            QVERIFY(db.exec(sql));
            QVERIFY(db.exec(QStringLiteral("CREATE TEMP TABLE t (x)"))); // forces the file to exist
        }
        const FileSnapshot before = snapshot(m_path);
        QString message;
        QCOMPARE(openError(m_path, &message), StorageError::Kind::NotMantissa);
        QVERIFY2(message.contains(QStringLiteral("another application")), qPrintable(message));
        QVERIFY(snapshot(m_path) == before);
    }

    void refusesCorruptFile_data()
    {
        QTest::addColumn<qint64>("offset"); // in pages of 4096 bytes; page 0 holds the header
        QTest::addColumn<qint64>("length");
        QTest::addColumn<bool>("truncate");
        QTest::newRow("schema page") << qint64(0) << qint64(1) << false;
        QTest::newRow("data pages") << qint64(4) << qint64(8) << false;
        QTest::newRow("truncated") << qint64(20) << qint64(0) << true;
    }
    void refusesCorruptFile()
    {
        QFETCH(qint64, offset);
        QFETCH(qint64, length);
        QFETCH(bool, truncate);
        buildDatabase(m_path, 20000);
        QVERIFY(!QFile::exists(m_path + QStringLiteral("-wal"))); // all in the main file
        {
            QFile file(m_path);
            QVERIFY(file.open(QIODevice::ReadWrite));
            QVERIFY(file.size() > 30 * 4096);
            if (truncate) {
                QVERIFY(file.resize(offset * 4096));
            } else {
                // Keep the 100-byte file header: the file still claims to be SQLite.
                const qint64 start = std::max<qint64>(offset * 4096, 100);
                file.seek(start);
                file.write(QByteArray(int(offset * 4096 + length * 4096 - start), '\x5a'));
            }
        }
        const FileSnapshot before = snapshot(m_path);
        QTest::qWait(20);
        QString message;
        QCOMPARE(openError(m_path, &message), StorageError::Kind::Corrupt);
        QVERIFY2(message.startsWith(m_path + QStringLiteral(": the database is corrupt")), qPrintable(message));
        QVERIFY(snapshot(m_path) == before);
    }

    void refusesMissingDirectory()
    {
        const QString directory = m_dir.filePath(QStringLiteral("no/such/directory"));
        const QString path = directory + QStringLiteral("/runs.sqlite");
        QString message;
        QCOMPARE(openError(path, &message), StorageError::Kind::NotFound);
        QVERIFY2(message.contains(directory + QStringLiteral(" does not exist")), qPrintable(message));
        QVERIFY(!QFile::exists(directory));
    }

    void refusesReadOnlyDirectory_data()
    {
        QTest::addColumn<bool>("existing");
        QTest::newRow("new database") << false;
        QTest::newRow("existing database") << true;
    }
    void refusesReadOnlyDirectory()
    {
        QFETCH(bool, existing);
        ReadOnlyDirectory directory = readOnlyDirectory(m_dir.filePath(QStringLiteral("read-only")));
        if (directory.path.isEmpty())
            QSKIP("no way to make a directory read-only here: running as root, chattr +i failed "
                  "and /proc accepts new files");
        if (existing && !directory.canHoldDatabase)
            QSKIP(qPrintable(
                QStringLiteral("a database cannot be put in the read-only directory %1 first").arg(directory.path)));
        const QString path = QDir(directory.path).filePath(QStringLiteral("runs.sqlite"));
        if (existing)
            buildDatabase(path, 10);
        directory.makeReadOnly();
        auto restore = qScopeGuard(directory.restore);
        const FileSnapshot before = snapshot(path);
        QString message;
        const StorageError::Kind kind = openError(path, &message);
        qInfo("read-only directory by %s: %s", qPrintable(directory.technique), qPrintable(message));
        QCOMPARE(kind, StorageError::Kind::ReadOnly);
        QVERIFY2(message.startsWith(path + QStringLiteral(": ")), qPrintable(message));
        QVERIFY(snapshot(path) == before);
    }

    void lockedPastTimeout()
    {
        StoreOptions options;
        options.busyTimeoutMs = 200;
        RunStore store(m_path, options);
        RawDatabase other(m_path);
        QVERIFY(other.exec(QStringLiteral("BEGIN EXCLUSIVE")));
        QElapsedTimer timer;
        timer.start();
        try {
            store.createRun(sampleRun());
            QFAIL("created a run in a database locked by another connection");
        } catch (const StorageError& error) {
            QCOMPARE(error.kind(), StorageError::Kind::Locked);
            QVERIFY2(error.message().startsWith(m_path + QStringLiteral(": the database stayed locked")),
                     qPrintable(error.message()));
            QVERIFY2(error.message().contains(QStringLiteral("200 ms")), qPrintable(error.message()));
        }
        QVERIFY2(timer.elapsed() >= 150, "gave up before the busy timeout");
        // WAL: readers are not blocked by a writer's lock.
        RunStore reader(m_path, options);
        QVERIFY(reader.listRuns().isEmpty());
        QVERIFY(other.exec(QStringLiteral("COMMIT")));
        QCOMPARE(store.createRun(sampleRun()), qint64(1));
    }

    void writerFailsWhenLockedTooLong()
    {
        qint64 id = 0;
        {
            RunStore store(m_path);
            id = store.createRun(sampleRun());
        }
        WriterOptions options;
        options.busyTimeoutMs = 100;
        options.commitIntervalMs = 0; // every step commits
        RunWriter writer(m_path, id, options);
        writer.onStep(makeStep(1));
        QCOMPARE(writer.committedSteps(), qint64(1));
        RawDatabase other(m_path);
        QVERIFY(other.exec(QStringLiteral("BEGIN EXCLUSIVE")));
        writer.onStep(makeStep(2)); // locked: kept for the next commit
        writer.onStep(makeStep(3));
        QVERIFY(!writer.failed());
        writer.onStep(makeStep(4)); // third locked commit in a row: a failure
        QVERIFY(writer.failed());
        QVERIFY2(writer.errorMessage().contains(QStringLiteral("locked")), qPrintable(writer.errorMessage()));
        writer.onStep(makeStep(5)); // ignored, does not throw
        QVERIFY(other.exec(QStringLiteral("COMMIT")));
        QVERIFY(!writer.flush());
    }

    void writerReportsFullDisk()
    {
        if (!isRoot())
            QSKIP("filling a disk needs a small tmpfs, and mounting one needs root");
        const QString mountPoint = m_dir.filePath(QStringLiteral("small-disk"));
        QVERIFY(QDir().mkpath(mountPoint));
        if (QProcess::execute(QStringLiteral("mount"),
                              {QStringLiteral("-t"), QStringLiteral("tmpfs"), QStringLiteral("-o"),
                               QStringLiteral("size=1m"), QStringLiteral("tmpfs"), mountPoint}) != 0) {
            QSKIP("cannot mount a 1 MiB tmpfs here (no CAP_SYS_ADMIN?), so a full disk cannot be made");
        }
        auto unmount = qScopeGuard([&] { QProcess::execute(QStringLiteral("umount"), {mountPoint}); });
        const QString path = QDir(mountPoint).filePath(QStringLiteral("runs.sqlite"));
        RunStore store(path);
        const qint64 id = store.createRun(sampleRun());
        qint64 committed = 0;
        QString message;
        {
            WriterOptions options;
            options.maxBufferedSteps = 1000; // many commits before the disk fills
            RunWriter writer(path, id, options);
            for (qint64 n = 1; n <= 1000000 && !writer.failed(); ++n)
                writer.onStep(makeStep(n));
            QVERIFY2(writer.failed(), "1 MiB held a million steps?");
            message = writer.errorMessage();
            QVERIFY2(message.startsWith(path + QStringLiteral(": the disk is full")), qPrintable(message));
            committed = writer.committedSteps();
            qInfo("failed after %lld committed steps, %lld commits: %s", committed, writer.commitCount(),
                  qPrintable(message));
            QVERIFY(committed > 0);
        }
        const RunInfo run = store.run(id);
        QCOMPARE(run.status, RunStatus::Failed);
        QCOMPARE(run.errorMessage, message);
        const StepSeries steps = store.steps(id);
        QCOMPARE(steps.size(), committed);
        QString why;
        QVERIFY2(isIntactPrefix(steps, &why), qPrintable(why));
    }

private:
    QTemporaryDir m_dir;
    QString m_path;
};

QTEST_GUILESS_MAIN(FailureTest)
#include "failure_test.moc"
