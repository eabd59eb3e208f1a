// RunStore's API for the CLI and the GUI: creating, naming, finding, listing, organising,
// finishing and deleting runs; checkpoints; resolving the database path.
#include "storage/database_path.h"
#include "storage/run_store.h"
#include "storage/run_writer.h"
#include "storage/storage_error.h"
#include "test_support.h"

#include <QDir>
#include <QFile>
#include <QScopeGuard>
#include <QTemporaryDir>
#include <QTest>

using namespace mantissa;
using namespace mantissa::storage;
using namespace mantissa::storage::test;

namespace {

QStringList names(const QList<RunInfo>& runs)
{
    QStringList result;
    for (const RunInfo& run : runs)
        result << run.name;
    return result;
}

StorageError::Kind errorKind(const std::function<void()>& action, QString* message = nullptr)
{
    try {
        action();
    } catch (const StorageError& error) {
        if (message)
            *message = error.message();
        return error.kind();
    }
    return StorageError::Kind(-1);
}

// Restores an environment variable (or its absence) when destroyed.
auto restoreLater(const char* name)
{
    const bool wasSet = qEnvironmentVariableIsSet(name);
    const QByteArray value = qgetenv(name);
    return qScopeGuard([=] { wasSet ? qputenv(name, value) : qunsetenv(name); });
}

} // namespace

class RunStoreTest : public QObject {
    Q_OBJECT

private slots:
    void init()
    {
        m_dir = std::make_unique<QTemporaryDir>();
        QVERIFY(m_dir->isValid());
        m_path = m_dir->filePath(QStringLiteral("runs.sqlite"));
        m_store = std::make_unique<RunStore>(m_path);
    }
    void cleanup()
    {
        m_store.reset();
        m_dir.reset();
    }

    void generatesNames_data()
    {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QString>("precision");
        QTest::addColumn<QStringList>("expected"); // three runs in a row
        QTest::newRow("preset and precision")
            << "mlp"
            << "mixed-fp16" << QStringList{"mlp-mixed-fp16-1", "mlp-mixed-fp16-2", "mlp-mixed-fp16-3"};
        QTest::newRow("no preset") << ""
                                   << "fp32" << QStringList{"run-fp32-1", "run-fp32-2", "run-fp32-3"};
        QTest::newRow("no precision") << "cnn"
                                      << "" << QStringList{"cnn-1", "cnn-2", "cnn-3"};
        QTest::newRow("spaces and capitals")
            << "Wide MLP"
            << "Mixed BF16" << QStringList{"wide-mlp-mixed-bf16-1", "wide-mlp-mixed-bf16-2", "wide-mlp-mixed-bf16-3"};
    }
    void generatesNames()
    {
        QFETCH(QString, preset);
        QFETCH(QString, precision);
        QFETCH(QStringList, expected);
        m_store->createRun(sampleRun(QStringLiteral("mlp"), QStringLiteral("fp32"))); // another prefix
        QStringList got;
        for (int i = 0; i < 3; ++i)
            got << m_store->run(m_store->createRun(sampleRun(preset, precision))).name;
        QCOMPARE(got, expected);
    }

    void numbersPastTheLargestName()
    {
        NewRun run = sampleRun();
        run.name = QStringLiteral("mlp-mixed-fp16-7");
        m_store->createRun(run);
        QCOMPARE(m_store->run(m_store->createRun(sampleRun())).name, QStringLiteral("mlp-mixed-fp16-8"));
    }

    void rejectsBadNames_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("problem");
        QTest::newRow("taken") << "baseline"
                               << "already exists";
        QTest::newRow("digits") << "123"
                                << "all digits";
        QTest::newRow("too long") << QString(201, u'x') << "longer than 200";
    }
    void rejectsBadNames()
    {
        QFETCH(QString, name);
        QFETCH(QString, problem);
        NewRun run = sampleRun();
        run.name = QStringLiteral("baseline");
        const qint64 baseline = m_store->createRun(run);
        run.name = name;
        QString message;
        QCOMPARE(errorKind([&] { m_store->createRun(run); }, &message), StorageError::Kind::InvalidArgument);
        QVERIFY2(message.contains(problem), qPrintable(message));
        const qint64 other = m_store->createRun(sampleRun());
        QCOMPARE(errorKind([&] { m_store->renameRun(other, name); }), StorageError::Kind::InvalidArgument);
        QCOMPARE(m_store->listRuns().size(), 2);
        QCOMPARE(m_store->run(baseline).name, QStringLiteral("baseline"));
    }

    void storesEverythingOfANewRun()
    {
        NewRun run = sampleRun();
        run.name = QStringLiteral("  first  ");
        run.device = QStringLiteral("cuda: NVIDIA H100, driver 550.54, CUDA 12.4, cuDNN 9.1");
        run.tags = {QStringLiteral("zeta"), QStringLiteral("alpha")};
        run.notes = QStringLiteral("baseline for the fp16 comparison");
        const QDateTime before = QDateTime::currentDateTimeUtc().addMSecs(-1);
        const RunInfo info = m_store->run(m_store->createRun(run));
        QCOMPARE(info.name, QStringLiteral("first"));
        QCOMPARE(info.status, RunStatus::Running);
        QVERIFY(info.createdAt >= before && info.createdAt <= QDateTime::currentDateTimeUtc());
        QVERIFY(!info.finishedAt.isValid());
        QCOMPARE(info.configJson, run.configJson);
        QCOMPARE(info.preset, QStringLiteral("mlp"));
        QCOMPARE(info.precision, QStringLiteral("mixed-fp16"));
        QCOMPARE(info.device, run.device);
        QCOMPARE(info.engineVersion, QString::fromStdString(buildIdentity()));
        QCOMPARE(info.tags, (QStringList{QStringLiteral("alpha"), QStringLiteral("zeta")}));
        QCOMPARE(info.notes, run.notes);
        QCOMPARE(info.writerPid, QCoreApplication::applicationPid());
    }

    void finishesRuns()
    {
        const qint64 id = m_store->createRun(sampleRun());
        RunSummary finish;
        finish.status = RunStatus::Diverged;
        finish.wallSeconds = 12.5;
        finish.peakBytes = 123456789;
        finish.message = "loss became NaN at step 40";
        finish.epochs = 1;
        finish.trainLoss = 2.25f;
        finish.bestTestAccuracy = 0.5f;
        finish.testAccuracy = 0.25f;
        finish.steps = 40;
        finish.skippedSteps = 3;
        finish.finalLossScale = 1024;
        finish.samplesPerSecond = 5000;
        m_store->finishRun(id, finish);
        const RunInfo info = m_store->run(id);
        QCOMPARE(info.status, RunStatus::Diverged);
        QVERIFY(info.finishedAt.isValid());
        QCOMPARE(info.wallSeconds, std::optional<double>(12.5));
        QCOMPARE(info.peakMemoryBytes, std::optional<qint64>(123456789));
        QCOMPARE(info.errorMessage, QStringLiteral("loss became NaN at step 40"));
        QCOMPARE(info.summary.finalTrainLoss, std::optional<double>(2.25));
        QCOMPARE(info.summary.bestTestAccuracy, std::optional<double>(0.5));
        QCOMPARE(info.summary.finalTestAccuracy, std::optional<double>(0.25));
        QCOMPARE(info.summary.steps, std::optional<qint64>(40));
        QCOMPARE(info.summary.skippedSteps, std::optional<qint64>(3));
        QCOMPARE(info.summary.finalLossScale, std::optional<double>(1024));
        QCOMPARE(info.summary.samplesPerSecond, std::optional<double>(5000));
        finish.status = RunStatus::Running;
        QCOMPARE(errorKind([&] { m_store->finishRun(id, finish); }), StorageError::Kind::InvalidArgument);
        QCOMPARE(errorKind([&] { m_store->finishRun(999, finishedSummary()); }), StorageError::Kind::NotFound);

        // Stopped before its first evaluation: the engine's placeholders are not stored as
        // results, and "stopped by the user" is not an error message.
        const qint64 stopped = m_store->createRun(sampleRun());
        RunSummary early;
        early.status = RunStatus::Stopped;
        early.message = "stopped by the user at step 3";
        early.steps = 3;
        early.testAccuracy = 0.1f; // a placeholder while epochs == 0
        m_store->finishRun(stopped, early);
        const RunInfo stoppedInfo = m_store->run(stopped);
        QCOMPARE(stoppedInfo.status, RunStatus::Stopped);
        QCOMPARE(stoppedInfo.summary.steps, std::optional<qint64>(3));
        QVERIFY(!stoppedInfo.summary.finalTestAccuracy);
        QVERIFY(!stoppedInfo.summary.bestTestAccuracy);
        QVERIFY(!stoppedInfo.summary.finalTrainLoss);
        QVERIFY(!stoppedInfo.summary.samplesPerSecond);
        QVERIFY(!stoppedInfo.wallSeconds);
        QVERIFY(stoppedInfo.errorMessage.isEmpty());
    }

    // The fingerprint of the data a run saw comes back as stored; a run created without one has none.
    void recordsTheDataFingerprint()
    {
        NewRun run = sampleRun();
        run.dataFingerprint = QStringLiteral("0123456789abcdef");
        QCOMPARE(m_store->run(m_store->createRun(run)).dataFingerprint, QStringLiteral("0123456789abcdef"));
        QCOMPARE(m_store->run(m_store->createRun(sampleRun())).dataFingerprint, QString());
    }

    // An imported model's file is kept once per content: two runs of one file share its bytes, a
    // run can be given its file back after the file moved or changed, and deleting the last run
    // of a model deletes the bytes.
    void keepsModelFilesByContent()
    {
        const QString source = m_dir->filePath(QStringLiteral("model.onnx"));
        const QByteArray bytes("not really ONNX, but bytes all the same\0\x01\x02", 42);
        const auto writeSource = [&](const QByteArray& content) {
            QFile file(source);
            QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
            QCOMPARE(file.write(content), content.size());
        };
        writeSource(bytes);
        NewRun run = sampleRun();
        run.modelSource = source;
        run.modelBytes = bytes;
        const qint64 first = m_store->createRun(run);
        const qint64 second = m_store->createRun(run);
        const qint64 layerList = m_store->createRun(sampleRun());
        for (qint64 id : {first, second, layerList})
            m_store->finishRun(id, finishedSummary());
        const RunInfo info = m_store->run(first);
        QCOMPARE(info.modelSource, source);
        // Python's hashlib.sha256 of those 42 bytes.
        QCOMPARE(info.modelSha256, QStringLiteral("8802360a34ab05009e9ff1e8c8f1b81489029f85db1cd2cb1f2d4f19a57cd8d8"));
        QCOMPARE(m_store->run(second).modelSha256, info.modelSha256);
        QCOMPARE(m_store->run(layerList).modelSha256, QString());
        QCOMPARE(RawDatabase(m_path).scalar(QStringLiteral("SELECT count(*) FROM model_files")).toInt(), 1);

        // The file where it was: its own path.
        QCOMPARE(m_store->modelFilePath(info), QFileInfo(source).absoluteFilePath());
        // Changed, then gone: the stored copy, beside the database.
        writeSource(QByteArray("another model"));
        const QString copy = m_store->modelFilePath(info);
        QCOMPARE(copy, m_dir->filePath(QStringLiteral("runs-models/%1.onnx").arg(info.modelSha256)));
        QVERIFY(QFile::remove(source));
        QCOMPARE(m_store->modelFilePath(info), copy);
        QFile restored(copy);
        QVERIFY(restored.open(QIODevice::ReadOnly));
        QCOMPARE(restored.readAll(), bytes);
        QVERIFY_THROWS_EXCEPTION(StorageError, m_store->modelFilePath(m_store->run(layerList)));

        m_store->deleteRun(first);
        QCOMPARE(RawDatabase(m_path).scalar(QStringLiteral("SELECT count(*) FROM model_files")).toInt(),
                 1); // the second run still needs it
        m_store->deleteRun(second);
        QCOMPARE(RawDatabase(m_path).scalar(QStringLiteral("SELECT count(*) FROM model_files")).toInt(), 0);
    }

    // A data-parallel run's facts as columns and rows, not only as text: its world size, each
    // rank's throughput (written by the writer's finish, as RunRecorder does) and the rank an
    // overflow started on.
    void recordsDataParallelRuns()
    {
        NewRun run = sampleRun();
        run.worldSize = 2;
        const qint64 id = m_store->createRun(run);
        QCOMPARE(m_store->run(id).worldSize, 2);
        QCOMPARE(m_store->run(m_store->createRun(sampleRun())).worldSize, 1);
        RunSummary finish = finishedSummary();
        finish.ranks = {{0, 10.0, 800.0, 1.5}, {1, 10.5, 761.9, 2.5}};
        {
            RunWriter writer(m_path, id);
            EventRecord overflow;
            overflow.step = 7;
            overflow.firstRank = 1;
            writer.onEvent(overflow);
            EventRecord plain;
            plain.step = 8; // no rank of its own: the 16-bit sum overflowed
            writer.onEvent(plain);
            QVERIFY(writer.finish(finish));
        }
        const QList<RankThroughput> ranks = m_store->rankThroughput(id);
        QCOMPARE(ranks.size(), 2);
        QCOMPARE(ranks[1].rank, 1);
        QCOMPARE(ranks[1].trainSeconds, 10.5);
        QCOMPARE(ranks[1].samplesPerSecond, 761.9);
        QCOMPARE(ranks[1].allReduceSeconds, 2.5);
        QCOMPARE(ranks[0].allReduceShare(), 0.15);
        const QList<EventRecord> events = m_store->events(id);
        QCOMPARE(events[0].firstRank, 1);
        QCOMPARE(events[1].firstRank, -1);
        // Deleting the run deletes its ranks.
        m_store->deleteRun(id);
        RawDatabase db(m_path);
        QCOMPARE(db.scalar(QStringLiteral("SELECT count(*) FROM run_ranks")).toInt(), 0);
    }

    void findsRunsByIdOrName_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QString>("expected"); // empty: not found
        QTest::newRow("id") << "2"
                            << "mlp-mixed-fp16-2";
        QTest::newRow("name") << "mlp-mixed-fp16-1"
                              << "mlp-mixed-fp16-1";
        QTest::newRow("name with spaces around") << " mlp-mixed-fp16-2 "
                                                 << "mlp-mixed-fp16-2";
        QTest::newRow("unknown name") << "mlp-fp32-9"
                                      << "";
        QTest::newRow("unknown id") << "42"
                                    << "";
        QTest::newRow("negative number is a name") << "-1"
                                                   << "";
    }
    void findsRunsByIdOrName()
    {
        QFETCH(QString, key);
        QFETCH(QString, expected);
        m_store->createRun(sampleRun());
        m_store->createRun(sampleRun());
        if (!expected.isEmpty()) {
            QCOMPARE(m_store->findRun(key).name, expected);
            return;
        }
        QString message;
        QCOMPARE(errorKind([&] { m_store->findRun(key); }, &message), StorageError::Kind::NotFound);
        QVERIFY2(message.startsWith(m_path + QStringLiteral(": there is no run")), qPrintable(message));
        QVERIFY2(message.contains(key.trimmed()), qPrintable(message));
    }

    void listsNewestFirstWithFilters_data()
    {
        QTest::addColumn<RunFilter>("filter");
        QTest::addColumn<QStringList>("expected");
        RunFilter all;
        QTest::newRow("all") << all << QStringList{"cnn-fp32-1", "mlp-fp32-1", "mlp-mixed-fp16-2", "mlp-mixed-fp16-1"};
        RunFilter finished;
        finished.status = RunStatus::Finished;
        QTest::newRow("status") << finished << QStringList{"mlp-fp32-1", "mlp-mixed-fp16-1"};
        RunFilter preset;
        preset.preset = QStringLiteral("mlp");
        QTest::newRow("preset") << preset << QStringList{"mlp-fp32-1", "mlp-mixed-fp16-2", "mlp-mixed-fp16-1"};
        RunFilter precision;
        precision.precision = QStringLiteral("fp32");
        QTest::newRow("precision") << precision << QStringList{"cnn-fp32-1", "mlp-fp32-1"};
        RunFilter group;
        group.groupId = 1;
        QTest::newRow("group") << group << QStringList{"mlp-fp32-1", "mlp-mixed-fp16-1"};
        RunFilter tag;
        tag.tag = QStringLiteral("keep");
        QTest::newRow("tag") << tag << QStringList{"cnn-fp32-1", "mlp-mixed-fp16-1"};
        RunFilter combined;
        combined.preset = QStringLiteral("mlp");
        combined.status = RunStatus::Running;
        QTest::newRow("preset and status") << combined << QStringList{"mlp-mixed-fp16-2"};
        RunFilter limited;
        limited.limit = 2;
        QTest::newRow("limit") << limited << QStringList{"cnn-fp32-1", "mlp-fp32-1"};
    }
    void listsNewestFirstWithFilters()
    {
        QFETCH(RunFilter, filter);
        QFETCH(QStringList, expected);
        const qint64 group = m_store->createGroup(QStringLiteral("fp32 vs mixed"));
        QCOMPARE(group, qint64(1));
        const qint64 a = m_store->createRun(sampleRun(QStringLiteral("mlp"), QStringLiteral("mixed-fp16")));
        m_store->createRun(sampleRun(QStringLiteral("mlp"), QStringLiteral("mixed-fp16")));
        const qint64 c = m_store->createRun(sampleRun(QStringLiteral("mlp"), QStringLiteral("fp32")));
        const qint64 d = m_store->createRun(sampleRun(QStringLiteral("cnn"), QStringLiteral("fp32")));
        m_store->finishRun(a, finishedSummary());
        m_store->finishRun(c, finishedSummary());
        m_store->setRunGroup(a, group);
        m_store->setRunGroup(c, group);
        m_store->addTag(a, QStringLiteral("keep"));
        m_store->addTag(d, QStringLiteral("keep"));
        QCOMPARE(names(m_store->listRuns(filter)), expected);
    }

    void organisesRuns()
    {
        const qint64 id = m_store->createRun(sampleRun());
        m_store->renameRun(id, QStringLiteral("fp16 baseline"));
        QCOMPARE(m_store->findRun(QStringLiteral("fp16 baseline")).id, id);
        QCOMPARE(errorKind([&] { m_store->findRun(QStringLiteral("mlp-mixed-fp16-1")); }),
                 StorageError::Kind::NotFound);
        m_store->setNotes(id, QStringLiteral("lr too high?"));
        m_store->addTag(id, QStringLiteral("b"));
        m_store->addTag(id, QStringLiteral("a"));
        m_store->addTag(id, QStringLiteral(" a ")); // present already
        QCOMPARE(m_store->run(id).tags, (QStringList{QStringLiteral("a"), QStringLiteral("b")}));
        m_store->removeTag(id, QStringLiteral("b"));
        m_store->removeTag(id, QStringLiteral("never added"));
        const RunInfo info = m_store->run(id);
        QCOMPARE(info.tags, QStringList{QStringLiteral("a")});
        QCOMPARE(info.notes, QStringLiteral("lr too high?"));
        QCOMPARE(errorKind([&] { m_store->addTag(id, QStringLiteral("  ")); }), StorageError::Kind::InvalidArgument);
        QCOMPARE(errorKind([&] { m_store->setNotes(77, {}); }), StorageError::Kind::NotFound);
    }

    void groupsRuns()
    {
        const qint64 fp32 = m_store->createRun(sampleRun(QStringLiteral("mlp"), QStringLiteral("fp32")));
        const qint64 fp16 = m_store->createRun(sampleRun(QStringLiteral("mlp"), QStringLiteral("mixed-fp16")));
        m_store->createRun(sampleRun(QStringLiteral("cnn"), QStringLiteral("fp32")));
        const qint64 group = m_store->createGroup(QStringLiteral("mlp: fp32 vs mixed-fp16"));
        m_store->setRunGroup(fp32, group);
        m_store->setRunGroup(fp16, group);
        QCOMPARE(names(m_store->groupRuns(group)), (QStringList{"mlp-mixed-fp16-1", "mlp-fp32-1"}));
        QCOMPARE(m_store->groups().size(), 1);
        QCOMPARE(m_store->groups().front().name, QStringLiteral("mlp: fp32 vs mixed-fp16"));
        m_store->setRunGroup(fp16, std::nullopt);
        QCOMPARE(names(m_store->groupRuns(group)), QStringList{"mlp-fp32-1"});
        QCOMPARE(m_store->run(fp32).groupId, std::optional<qint64>(group));
        QCOMPARE(errorKind([&] { m_store->setRunGroup(fp32, 99); }), StorageError::Kind::NotFound);
        QCOMPARE(errorKind([&] { m_store->groupRuns(99); }), StorageError::Kind::NotFound);
        QCOMPARE(errorKind([&] { m_store->createGroup(QString()); }), StorageError::Kind::InvalidArgument);
        NewRun grouped = sampleRun();
        grouped.groupId = group;
        QCOMPARE(m_store->run(m_store->createRun(grouped)).groupId, std::optional<qint64>(group));
    }

    void storesCheckpointPaths_data()
    {
        QTest::addColumn<QString>("file");   // relative to the database directory, or absolute
        QTest::addColumn<QString>("stored"); // empty: stored as the absolute path
        QTest::newRow("inside") << "checkpoints/step-100.ckpt"
                                << "checkpoints/step-100.ckpt";
        QTest::newRow("outside") << "/var/tmp/elsewhere.ckpt"
                                 << "";
    }
    void storesCheckpointPaths()
    {
        QFETCH(QString, file);
        QFETCH(QString, stored);
        const qint64 id = m_store->createRun(sampleRun());
        const QString absolute = QDir(m_store->directory()).absoluteFilePath(file);
        m_store->addCheckpoint(id, absolute, 100, 2);
        const QList<CheckpointInfo> checkpoints = m_store->checkpoints(id);
        QCOMPARE(checkpoints.size(), 1);
        QCOMPARE(checkpoints.front().path, stored.isEmpty() ? absolute : stored);
        QCOMPARE(checkpoints.front().absolutePath, absolute);
        QCOMPARE(checkpoints.front().step, qint64(100));
        QCOMPARE(checkpoints.front().epoch, 2);
        RawDatabase db(m_path);
        QCOMPARE(db.scalar(QStringLiteral("SELECT path FROM checkpoints")).toString(),
                 stored.isEmpty() ? absolute : stored);
    }

    void deletesRunsWithRowsAndFiles()
    {
        const qint64 keep = m_store->createRun(sampleRun());
        const qint64 doomed = m_store->createRun(sampleRun());
        QDir(m_store->directory()).mkpath(QStringLiteral("checkpoints"));
        QStringList files;
        for (qint64 id : {keep, doomed}) {
            RunWriter writer(m_path, id);
            for (int n = 1; n <= 300; ++n)
                writer.onStep(makeStep(n));
            writer.onEpoch(makeEpoch(1));
            writer.onEvent(makeOverflow(5));
            const QString file = QDir(m_store->directory()).filePath(QStringLiteral("checkpoints/run-%1.ckpt").arg(id));
            QFile checkpoint(file);
            QVERIFY(checkpoint.open(QIODevice::WriteOnly));
            checkpoint.write("weights");
            checkpoint.close();
            writer.addCheckpoint(file, 300, 1);
            QVERIFY(writer.finish(finishedSummary()));
            files << file;
        }
        m_store->addTag(doomed, QStringLiteral("delete me"));
        QVERIFY(m_store->deleteRun(doomed).isEmpty());
        QCOMPARE(errorKind([&] { m_store->run(doomed); }), StorageError::Kind::NotFound);
        QVERIFY(!QFile::exists(files[1]));
        QVERIFY(QFile::exists(files[0]));
        RawDatabase db(m_path);
        for (const char* table : {"steps", "epochs", "events", "checkpoints", "run_tags"}) {
            QCOMPARE(
                db.scalar(
                      QStringLiteral("SELECT count(*) FROM %1 WHERE run_id = %2").arg(QLatin1String(table)).arg(doomed))
                    .toInt(),
                0);
        }
        QCOMPARE(m_store->steps(keep).size(), 300);
        QCOMPARE(m_store->epochs(keep).size(), 1);
        QCOMPARE(m_store->events(keep).size(), 1);
        QCOMPARE(m_store->checkpoints(keep).size(), 1);
        QCOMPARE(errorKind([&] { m_store->deleteRun(doomed); }), StorageError::Kind::NotFound);
    }

    void refusesToDeleteALiveRun()
    {
        const qint64 id = m_store->createRun(sampleRun()); // written by this live process
        QString message;
        QCOMPARE(errorKind([&] { m_store->deleteRun(id); }, &message), StorageError::Kind::InvalidArgument);
        QVERIFY2(message.contains(QStringLiteral("still being written")), qPrintable(message));
        m_store->finishRun(id, finishedSummary());
        QVERIFY(m_store->deleteRun(id).isEmpty());
    }

    void resolvesDatabasePath_data()
    {
        QTest::addColumn<QString>("option");
        QTest::addColumn<QString>("environment");
        QTest::addColumn<QString>("expected"); // relative to the temporary directory; "default"
        QTest::newRow("option wins") << "opt/a.sqlite"
                                     << "env/b.sqlite"
                                     << "opt/a.sqlite";
        QTest::newRow("environment") << ""
                                     << "env/b.sqlite"
                                     << "env/b.sqlite";
        QTest::newRow("default") << ""
                                 << ""
                                 << "default";
    }
    void resolvesDatabasePath()
    {
        QFETCH(QString, option);
        QFETCH(QString, environment);
        QFETCH(QString, expected);
        const QDir base(m_dir->path());
        // The default lives under XDG_DATA_HOME on Linux: point it into the test directory.
        const auto restoreDb = restoreLater("MANTISSA_DB"), restoreXdg = restoreLater("XDG_DATA_HOME");
        qputenv("MANTISSA_DB", environment.isEmpty() ? QByteArray() : base.filePath(environment).toUtf8());
        qputenv("XDG_DATA_HOME", base.filePath(QStringLiteral("xdg")).toUtf8());
        const QString resolved = resolveDatabasePath(option.isEmpty() ? option : base.filePath(option));
        if (expected == QStringLiteral("default")) {
            QCOMPARE(resolved, base.filePath(QStringLiteral("xdg/Mantissa/mantissa/runs.sqlite")));
        } else {
            QCOMPARE(resolved, base.filePath(expected));
        }
        QVERIFY(QFileInfo(resolved).dir().exists()); // created
        QVERIFY(!QFile::exists(resolved));           // but not the file
    }

private:
    std::unique_ptr<QTemporaryDir> m_dir;
    QString m_path;
    std::unique_ptr<RunStore> m_store;
};

QTEST_GUILESS_MAIN(RunStoreTest)
#include "run_store_test.moc"
