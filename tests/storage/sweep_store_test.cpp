// Sweeps in the run store: a sweep and its runs recorded together; several processes
// writing one database at once (a local sweep's workers) without losing a row; and the
// import of other run databases (a Slurm job array's per-task files): idempotent, keeping
// the sweep, and refusing foreign, corrupt and empty files by name with nothing changed.
#include "storage/run_store.h"
#include "storage/run_writer.h"
#include "storage/storage_error.h"
#include "test_support.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

using namespace mantissa;
using namespace mantissa::storage;
using namespace mantissa::storage::test;

namespace {

// A finished run of sweep `sweepUid` at `index` in the database at `path`: `steps` steps, one
// epoch, a tag and a checkpoint file beside the database. Returns the run's uid.
QString writeSweepRun(const QString& path, const QString& sweepUid, int index, qint64 steps)
{
    RunStore store(path);
    const std::optional<SweepInfo> existing = store.findSweep(sweepUid);
    const qint64 sweepId =
        existing ? existing->id
                 : store.createSweep({sweepUid, QStringLiteral("mlp: fp32 vs mixed-fp16"), QStringLiteral("{}"), 4});
    NewRun run = sampleRun(); // generated name "mlp-mixed-fp16-1" in every task file
    run.sweepId = sweepId;
    run.sweepIndex = index;
    run.tags = {QStringLiteral("sweep")};
    const qint64 id = store.createRun(run);
    {
        RunWriter writer(path, id);
        for (qint64 n = 1; n <= steps; ++n)
            writer.onStep(makeStep(n));
        writer.onEpoch(makeEpoch(1));
        const QString checkpoint = store.checkpointDirectory(id) + QStringLiteral("/final.ckpt");
        QDir().mkpath(QFileInfo(checkpoint).absolutePath());
        QFile file(checkpoint);
        if (file.open(QIODevice::WriteOnly))
            file.write("weights");
        writer.addCheckpoint(checkpoint, steps, 1);
        writer.finish(finishedSummary());
    }
    return store.run(id).uid;
}

StorageError::Kind importError(RunStore& store, const QString& source, QString* message)
{
    try {
        store.importRuns(source);
    } catch (const StorageError& error) {
        *message = error.message();
        return error.kind();
    }
    *message = QStringLiteral("imported");
    return StorageError::Kind::Sql;
}

} // namespace

class SweepStoreTest : public QObject {
    Q_OBJECT

private slots:
    void init()
    {
        m_dir = std::make_unique<QTemporaryDir>();
        QVERIFY(m_dir->isValid());
        m_path = m_dir->filePath(QStringLiteral("runs.sqlite"));
    }

    void sweepAndItsRunsRecordedTogether()
    {
        RunStore store(m_path);
        const qint64 sweepId = store.createSweep({{}, QStringLiteral("lr sweep"), QStringLiteral("{\"a\":1}"), 3});
        const qint64 other = store.createSweep({{}, QStringLiteral("other"), QStringLiteral("{\"b\":2}"), 1});
        QList<qint64> ids;
        for (int index : {2, 0, 1, 0}) { // index 0 twice: a run redone after an interruption
            NewRun run = sampleRun();
            run.sweepId = sweepId;
            run.sweepIndex = index;
            ids << store.createRun(run);
        }
        store.createRun(sampleRun()); // not in a sweep
        const QList<RunInfo> runs = store.sweepRuns(sweepId);
        QCOMPARE(runs.size(), 4);
        QCOMPARE(runs[0].id, ids[1]);
        QCOMPARE(runs[1].id, ids[3]);
        QCOMPARE(runs[2].id, ids[2]);
        QCOMPARE(runs[3].id, ids[0]);
        QCOMPARE(runs[3].sweepIndex, std::optional<int>(2));
        QCOMPARE(runs[3].sweepId, std::optional<qint64>(sweepId));
        QVERIFY(store.sweepRuns(other).isEmpty());
        QSet<QString> uids;
        for (const RunInfo& run : store.listRuns()) {
            QCOMPARE(run.uid.size(), 36);
            uids.insert(run.uid);
        }
        QCOMPARE(uids.size(), 5);

        const SweepInfo sweep = store.sweep(sweepId);
        QCOMPARE(sweep.name, QStringLiteral("lr sweep"));
        QCOMPARE(sweep.runCount, 3);
        QCOMPARE(store.findSweep(sweep.uid)->id, sweepId);
        QCOMPARE(store.findSweepBySpec(QStringLiteral("{\"b\":2}"))->id, other);
        QVERIFY(!store.findSweepBySpec(QStringLiteral("{}")));
        QCOMPARE(store.sweeps().size(), 2);
        QCOMPARE(store.sweeps().front().id, other);
        try {
            store.sweepRuns(99);
            QFAIL("an unknown sweep was listed");
        } catch (const StorageError& error) {
            QCOMPARE(error.kind(), StorageError::Kind::NotFound);
        }
        NewRun orphan = sampleRun();
        orphan.sweepId = 99;
        QVERIFY_THROWS_EXCEPTION(StorageError, store.createRun(orphan));
    }

    // Four processes, three runs each, every one committing every 2 ms: WAL and the busy
    // timeout must let them all through without a failed commit or a lost row.
    void concurrentWritersLoseNoRows()
    {
        constexpr int kProcesses = 4, kRuns = 3, kSteps = 300;
        {
            RunStore store(m_path);
        }
        std::vector<std::unique_ptr<QProcess>> processes;
        for (int p = 0; p < kProcesses; ++p) {
            auto process = std::make_unique<QProcess>();
            process->start(
                QStringLiteral(MANTISSA_CONCURRENT_WRITER),
                {m_path, QStringLiteral("writer%1").arg(p), QString::number(kRuns), QString::number(kSteps)});
            processes.push_back(std::move(process));
        }
        for (auto& process : processes) {
            QVERIFY(process->waitForFinished(60000));
            QVERIFY2(process->exitStatus() == QProcess::NormalExit && process->exitCode() == 0,
                     process->readAllStandardError().constData());
        }
        RunStore store(m_path);
        const QList<RunInfo> runs = store.listRuns();
        QCOMPARE(runs.size(), kProcesses * kRuns);
        for (const RunInfo& run : runs) {
            QCOMPARE(run.status, RunStatus::Finished);
            const StepSeries steps = store.steps(run.id);
            QCOMPARE(steps.size(), kSteps);
            QString why;
            QVERIFY2(isIntactPrefix(steps, &why), qPrintable(run.name + QStringLiteral(": ") + why));
            QCOMPARE(store.epochs(run.id).size(), kSteps / 100);
        }
    }

    void importKeepsTheSweepAndIsIdempotent()
    {
        const QString sweepUid = QStringLiteral("3f9a2c00-0000-4000-8000-000000000001");
        QDir(m_dir->path()).mkpath(QStringLiteral("out/runs"));
        const QString task0 = m_dir->filePath(QStringLiteral("out/runs/run-0.sqlite"));
        const QString task1 = m_dir->filePath(QStringLiteral("out/runs/run-1.sqlite"));
        const QString uid0 = writeSweepRun(task0, sweepUid, 0, 120);
        const QString uid1 = writeSweepRun(task1, sweepUid, 1, 80);
        // A run still being written (by this live process) in the second file.
        qint64 runningId = 0;
        {
            RunStore store(task1);
            runningId = store.createRun(sampleRun(QStringLiteral("mlp"), QStringLiteral("fp32")));
        }

        RunStore store(m_path);
        store.createRun(sampleRun()); // already here: "mlp-mixed-fp16-1", so the imports are renamed
        const ImportResult first = store.importRuns(task0);
        QCOMPARE(first.imported, 1);
        QCOMPARE(first.sweeps, QStringList{QStringLiteral("mlp: fp32 vs mixed-fp16")});
        const ImportResult second = store.importRuns(task1);
        QCOMPARE(second.imported, 1);
        QCOMPARE(second.stillRunning, 1);
        QVERIFY(second.sweeps.isEmpty()); // the same sweep, found by its uid

        const std::optional<SweepInfo> sweep = store.findSweep(sweepUid);
        QVERIFY(sweep);
        QCOMPARE(store.sweeps().size(), 1);
        const QList<RunInfo> runs = store.sweepRuns(sweep->id);
        QCOMPARE(runs.size(), 2);
        QCOMPARE(runs[0].uid, uid0);
        QCOMPARE(runs[1].uid, uid1);
        QCOMPARE(runs[0].sweepIndex, std::optional<int>(0));
        QCOMPARE(runs[1].sweepIndex, std::optional<int>(1));
        QCOMPARE(runs[0].name, QStringLiteral("mlp-mixed-fp16-1-2"));
        QCOMPARE(runs[1].name, QStringLiteral("mlp-mixed-fp16-1-3"));
        QCOMPARE(runs[0].status, RunStatus::Finished);
        QCOMPARE(runs[0].tags, QStringList{QStringLiteral("sweep")});
        QString why;
        QCOMPARE(store.steps(runs[0].id).size(), 120);
        QVERIFY2(isIntactPrefix(store.steps(runs[0].id), &why), qPrintable(why));
        QCOMPARE(store.steps(runs[1].id).size(), 80);
        QCOMPARE(store.epochs(runs[1].id).size(), 1);
        const QList<CheckpointInfo> checkpoints = store.checkpoints(runs[1].id);
        QCOMPARE(checkpoints.size(), 1);
        QVERIFY2(QFile::exists(checkpoints[0].absolutePath), qPrintable(checkpoints[0].absolutePath));
        QVERIFY(checkpoints[0].absolutePath.startsWith(m_dir->filePath(QStringLiteral("out/runs/"))));

        // Again: nothing new.
        const qsizetype before = store.listRuns().size();
        const ImportResult again = store.importRuns(task0);
        QCOMPARE(again.imported, 0);
        QCOMPARE(again.alreadyPresent, 1);
        QCOMPARE(store.importRuns(task1).alreadyPresent, 1);
        QCOMPARE(store.listRuns().size(), before);

        // Once the running run ends, the next import takes it (outside the sweep).
        {
            RunStore task(task1);
            task.finishRun(runningId, finishedSummary());
        }
        QCOMPARE(store.importRuns(task1).imported, 1);
        QCOMPARE(store.listRuns().size(), before + 1);
    }

    // An imported run of a model file brings the file's bytes along (the runs refer to them),
    // once however often they are imported.
    void importBringsTheModelFiles()
    {
        const QString source = m_dir->filePath(QStringLiteral("other.sqlite"));
        const QByteArray bytes("the model's bytes");
        {
            RunStore other(source);
            NewRun run = sampleRun();
            run.modelSource = QStringLiteral("/nowhere/model.onnx");
            run.modelBytes = bytes;
            other.finishRun(other.createRun(run), finishedSummary());
        }
        RunStore store(m_path);
        QCOMPARE(store.importRuns(source).imported, 1);
        QCOMPARE(store.importRuns(source).alreadyPresent, 1);
        const RunInfo imported = store.listRuns().first();
        QCOMPARE(imported.modelSource, QStringLiteral("/nowhere/model.onnx"));
        QFile copy(store.modelFilePath(imported)); // the source is gone: the stored copy
        QVERIFY(copy.open(QIODevice::ReadOnly));
        QCOMPARE(copy.readAll(), bytes);
    }

    void importRefusesWhatIsNotARunDatabase_data()
    {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<int>("expected");
        QTest::addColumn<QString>("message");
        QTest::newRow("foreign SQLite") << QStringLiteral("foreign") << int(StorageError::Kind::NotMantissa)
                                        << QStringLiteral("another application");
        QTest::newRow("text file") << QStringLiteral("text") << int(StorageError::Kind::NotSqlite)
                                   << QStringLiteral("is not an SQLite database");
        QTest::newRow("empty file") << QStringLiteral("empty") << int(StorageError::Kind::NotSqlite)
                                    << QStringLiteral("is an empty file");
        QTest::newRow("corrupt run database")
            << QStringLiteral("corrupt") << int(StorageError::Kind::Corrupt) << QStringLiteral("corrupt");
        QTest::newRow("the database itself") << QStringLiteral("self") << int(StorageError::Kind::InvalidArgument)
                                             << QStringLiteral("the run database itself");
        QTest::newRow("missing") << QStringLiteral("missing") << int(StorageError::Kind::NotFound)
                                 << QStringLiteral("does not exist");
    }
    void importRefusesWhatIsNotARunDatabase()
    {
        QFETCH(QString, kind);
        QFETCH(int, expected);
        QFETCH(QString, message);
        QString source = m_dir->filePath(QStringLiteral("task.sqlite"));
        if (kind == QLatin1String("foreign")) {
            RawDatabase db(source);
            QVERIFY(db.exec(QStringLiteral("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")));
        } else if (kind == QLatin1String("text") || kind == QLatin1String("empty")) {
            QFile file(source);
            QVERIFY(file.open(QIODevice::WriteOnly));
            if (kind == QLatin1String("text"))
                file.write("#!/bin/bash\nsbatch --array=0-7 sweep.sbatch\n");
        } else if (kind == QLatin1String("corrupt")) {
            writeSweepRun(source, QStringLiteral("u"), 0, 20000);
            QVERIFY(!QFile::exists(source + QStringLiteral("-wal")));
            QFile file(source);
            QVERIFY(file.open(QIODevice::ReadWrite));
            QVERIFY(file.size() > 12 * 4096);
            file.seek(4 * 4096);
            file.write(QByteArray(8 * 4096, '\x5a'));
        } else if (kind == QLatin1String("self")) {
            source = m_path;
        } else {
            source = m_dir->filePath(QStringLiteral("nothing-here.sqlite"));
        }
        RunStore store(m_path);
        const FileSnapshot before =
            kind == QLatin1String("self") || kind == QLatin1String("missing") ? FileSnapshot{} : snapshot(source);
        QString text;
        QCOMPARE(int(importError(store, source, &text)), expected);
        QVERIFY2(text.startsWith(QFileInfo(source).absoluteFilePath() + QStringLiteral(": ")), qPrintable(text));
        QVERIFY2(text.contains(message), qPrintable(text));
        if (kind != QLatin1String("self") && kind != QLatin1String("missing"))
            QVERIFY(snapshot(source) == before);
        QVERIFY(store.listRuns().isEmpty());
        QVERIFY(store.sweeps().isEmpty());
    }

private:
    std::unique_ptr<QTemporaryDir> m_dir;
    QString m_path;
};

QTEST_GUILESS_MAIN(SweepStoreTest)
#include "sweep_store_test.moc"
