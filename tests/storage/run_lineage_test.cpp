// A fork's lineage in the run store (schema version 12): the parent run and step are stored with
// the fork and read back by run(), findRun() and listRuns(); an unknown parent is refused; a
// deleted parent leaves the fork with its step and no parent id; an import links a fork to its
// parent's new id, or to none when the parent stayed behind. The saved states a fork can start
// from are listed and looked up by step, a step without one naming the steps that have one.
#include "storage/fork_point.h"
#include "storage/run_store.h"
#include "storage/storage_error.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

using namespace mantissa;
using namespace mantissa::storage;

namespace {

qint64 finishedRun(RunStore& store, const QString& name, std::optional<RunLineage> parent = {})
{
    NewRun run;
    run.name = name;
    run.configJson = QStringLiteral("{}");
    run.parent = parent;
    const qint64 id = store.createRun(run);
    RunSummary summary;
    summary.status = RunStatus::Finished;
    store.finishRun(id, summary);
    return id;
}

} // namespace

class RunLineageTest : public QObject {
    Q_OBJECT

private slots:
    void init()
    {
        m_dir = std::make_unique<QTemporaryDir>();
        QVERIFY(m_dir->isValid());
        m_path = m_dir->filePath(QStringLiteral("runs.sqlite"));
    }

    void aForkKeepsItsParentAndStep()
    {
        RunStore store(m_path);
        const qint64 parent = finishedRun(store, QStringLiteral("parent"));
        const qint64 fork = finishedRun(store, QStringLiteral("fork"), RunLineage{parent, 480});
        QVERIFY(!store.run(parent).parent.has_value());
        const RunInfo read = store.run(fork);
        QVERIFY(read.parent.has_value());
        QCOMPARE(read.parent->runId, std::optional<qint64>(parent));
        QCOMPARE(read.parent->step, qint64(480));
        QCOMPARE(store.findRun(QStringLiteral("fork")).parent->step, qint64(480));
        int forks = 0;
        for (const RunInfo& run : store.listRuns())
            forks += run.parent ? 1 : 0;
        QCOMPARE(forks, 1);
    }

    void anUnknownParentIsRefused()
    {
        RunStore store(m_path);
        try {
            finishedRun(store, QStringLiteral("orphan"), RunLineage{99, 10});
            QFAIL("created a fork of a run that does not exist");
        } catch (const StorageError& e) {
            QCOMPARE(e.kind(), StorageError::Kind::NotFound);
        }
        QVERIFY(store.listRuns().isEmpty());
    }

    void deletingTheParentKeepsTheForkAndItsStep()
    {
        RunStore store(m_path);
        const qint64 parent = finishedRun(store, QStringLiteral("parent"));
        const qint64 fork = finishedRun(store, QStringLiteral("fork"), RunLineage{parent, 40});
        store.deleteRun(parent);
        const RunInfo read = store.run(fork);
        QVERIFY(read.parent.has_value());
        QVERIFY(!read.parent->runId.has_value());
        QCOMPARE(read.parent->step, qint64(40));
    }

    void anImportLinksAForkToItsParentsNewId()
    {
        const QString source = m_dir->filePath(QStringLiteral("source.sqlite"));
        {
            RunStore store(source);
            const qint64 parent = finishedRun(store, QStringLiteral("parent"));
            finishedRun(store, QStringLiteral("fork"), RunLineage{parent, 64});
        }
        RunStore store(m_path);
        finishedRun(store, QStringLiteral("local")); // takes id 1, so the imported ids move
        QCOMPARE(store.importRuns(source).imported, 2);
        const RunInfo parent = store.findRun(QStringLiteral("parent"));
        const RunInfo fork = store.findRun(QStringLiteral("fork"));
        QCOMPARE(fork.parent->runId, std::optional<qint64>(parent.id));
        QCOMPARE(fork.parent->step, qint64(64));
    }

    void savedStatesAreFoundByStep()
    {
        RunStore store(m_path);
        const qint64 run = finishedRun(store, QStringLiteral("run"));
        const QString directory = store.checkpointDirectory(run);
        QVERIFY(QDir().mkpath(directory));
        for (const qint64 step : {10, 20, 30}) {
            const QString path = QDir(directory).filePath(QStringLiteral("step-%1.ckpt").arg(step));
            QFile file(path);
            QVERIFY(file.open(QIODevice::WriteOnly));
            store.addCheckpoint(run, path, step, 1);
        }
        QCOMPARE(savedStateSteps(store, run), (QList<qint64>{10, 20, 30}));
        QCOMPARE(forkPoint(store, store.run(run), 20).step, qint64(20));
        QCOMPARE(nearestSavedState(store, run, 24.0), std::optional<qint64>(20));
        QCOMPARE(nearestSavedState(store, run, 26.0), std::optional<qint64>(30));
        try {
            forkPoint(store, store.run(run), 25);
            QFAIL("found a state at a step without one");
        } catch (const StorageError& e) {
            QCOMPARE(e.kind(), StorageError::Kind::NotFound);
            QVERIFY2(e.message().contains(QStringLiteral("no saved training state at step 25; it has one at steps 10, "
                                                         "20 and 30; the nearest are 20 and 30")),
                     qPrintable(e.message()));
        }
        // A long list keeps its ends.
        const qint64 many = finishedRun(store, QStringLiteral("many"));
        for (qint64 step = 10; step <= 200; step += 10)
            store.addCheckpoint(many, QDir(directory).filePath(QStringLiteral("step-10.ckpt")), step, 1);
        try {
            forkPoint(store, store.run(many), 5);
            QFAIL("found a state at a step without one");
        } catch (const StorageError& e) {
            QVERIFY2(
                e.message().endsWith(QStringLiteral("it has one at steps 10, 20, 30, 40, 50, 60, …, 150, 160, 170, "
                                                    "180, 190 and 200")),
                qPrintable(e.message()));
        }
        const qint64 none = finishedRun(store, QStringLiteral("none"));
        QVERIFY(!nearestSavedState(store, none, 5.0).has_value());
        try {
            forkPoint(store, store.run(none), 5);
            QFAIL("found a state in a run without one");
        } catch (const StorageError& e) {
            QVERIFY2(e.message().contains(QStringLiteral("it has none")), qPrintable(e.message()));
        }
    }

private:
    std::unique_ptr<QTemporaryDir> m_dir;
    QString m_path;
};

QTEST_GUILESS_MAIN(RunLineageTest)
#include "run_lineage_test.moc"
