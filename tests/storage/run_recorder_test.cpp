// The one recording path (storage::RunRecorder) on a real Trainer: a short synthetic run is
// recorded and read back (steps, epochs, events, numerics samples, summary, checkpoints, whose
// weights are those the epoch's evaluation measured); a stopped run keeps its weights; a
// checkpoint that cannot be written fails the run and stops the trainer; a recorder closed
// unfinished leaves its run interrupted.
#include "small_run_config.h"
#include "test_support.h"

#include "engine/backend/backend.h"
#include "engine/data/dataset.h"
#include "storage/run_recorder.h"
#include "storage/run_store.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <vector>

using namespace mantissa;
using namespace mantissa::storage;
using namespace mantissa::storage::test;

namespace {

// What the trainer reported, to compare with what the store holds.
struct Collector final : TrainingObserver {
    std::vector<StepRecord> steps;
    std::vector<EpochRecord> epochs;
    std::vector<EventRecord> events;
    std::vector<std::int64_t> numericsSteps;
    void onStep(const StepRecord& r) override { steps.push_back(r); }
    void onEpoch(const EpochRecord& r) override { epochs.push_back(r); }
    void onEvent(const EventRecord& r) override { events.push_back(r); }
    void onNumerics(const NumericsRecord& r) override { numericsSteps.push_back(r.step); }
};

// Stops the trainer when step `at` has been recorded.
struct StopAt final : TrainingObserver {
    Trainer& trainer;
    std::int64_t at;
    StopAt(Trainer& t, std::int64_t step) : trainer(t), at(step) {}
    void onStep(const StepRecord& r) override
    {
        if (r.step == at)
            trainer.requestStop();
    }
};

} // namespace

class RunRecorderTest : public QObject {
    Q_OBJECT

private slots:
    void init()
    {
        m_dir = std::make_unique<QTemporaryDir>();
        QVERIFY(m_dir->isValid());
        m_store = std::make_unique<RunStore>(m_dir->filePath(QStringLiteral("runs.sqlite")));
        m_backend = makeCpuBackend(1);
    }
    void cleanup()
    {
        m_store.reset();
        m_dir.reset();
    }

    void recordsATrainerRunAndReadsItBack()
    {
        RunConfig config = test_support::smallSyntheticConfig(); // 2 epochs of 16 steps
        config.training.checkpointEveryEpochs = 1;
        config.numerics.every = 8;
        const DatasetSplits data = loadDatasets(config.data, config.training.seed);
        Trainer trainer(config, *m_backend, data);
        RunMetadata metadata;
        metadata.name = QStringLiteral("recorded");
        metadata.tags = {QStringLiteral("sweep")};
        RunRecorder recorder(*m_store, config, *m_backend, metadata);
        Collector seen;
        recorder.attach(trainer);
        trainer.addObserver(&seen);
        const RunSummary trained = trainer.run();
        const RunSummary recorded = recorder.finish(trained);
        QVERIFY2(!recorder.failed(), qPrintable(recorder.errorMessage()));
        QCOMPARE(recorded.status, RunStatus::Finished);

        const qint64 id = recorder.runId();
        const RunInfo run = m_store->run(id);
        QCOMPARE(run.name, QStringLiteral("recorded"));
        QCOMPARE(recorder.runName(), run.name);
        QCOMPARE(run.status, RunStatus::Finished);
        QCOMPARE(run.tags, QStringList{QStringLiteral("sweep")});
        QCOMPARE(run.preset, QStringLiteral("small"));
        QCOMPARE(run.precision, QStringLiteral("fp32"));
        QVERIFY2(run.device.startsWith(QStringLiteral("cpu")), qPrintable(run.device));
        // The kernel paths: the plan per 16-bit type, and at the end the oneDNN kernels this
        // fp32 run used, which only the finished run can know.
        QVERIFY2(run.kernels.contains(QStringLiteral("bf16: ")) && run.kernels.contains(QStringLiteral("fp16: ")),
                 qPrintable(run.kernels));
        QVERIFY2(run.kernels.contains(QStringLiteral("fp32 matmul: ")), qPrintable(run.kernels));
        QCOMPARE(parseRunConfig(run.configJson.toStdString(), "stored").training.checkpointEveryEpochs, 1);
        QCOMPARE(run.summary.steps, std::optional<qint64>(32));
        QCOMPARE(run.summary.skippedSteps, std::optional<qint64>(0));
        QCOMPARE(run.summary.finalTrainLoss, std::optional<double>(trained.trainLoss));
        QCOMPARE(run.summary.finalTestAccuracy, std::optional<double>(trained.testAccuracy));
        QCOMPARE(run.summary.bestTestAccuracy, std::optional<double>(trained.bestTestAccuracy));
        QCOMPARE(run.wallSeconds, std::optional<double>(trained.wallSeconds));
        QCOMPARE(run.peakMemoryBytes, std::optional<qint64>(qint64(trained.peakBytes)));
        QVERIFY(run.errorMessage.isEmpty());

        const StepSeries steps = m_store->steps(id);
        QCOMPARE(steps.size(), qsizetype(seen.steps.size()));
        for (qsizetype i = 0; i < steps.size(); ++i) {
            QCOMPARE(steps.step[i], double(seen.steps[std::size_t(i)].step));
            QCOMPARE(steps.loss[i], double(seen.steps[std::size_t(i)].loss));
            QCOMPARE(steps.lossScale[i], double(seen.steps[std::size_t(i)].lossScale));
        }
        const QList<EpochRecord> epochs = m_store->epochs(id);
        QCOMPARE(epochs.size(), 2);
        for (qsizetype i = 0; i < epochs.size(); ++i) {
            QCOMPARE(epochs[i].testLoss, seen.epochs[std::size_t(i)].testLoss);
            QCOMPARE(epochs[i].testAccuracy, seen.epochs[std::size_t(i)].testAccuracy);
        }
        const QList<EventRecord> events = m_store->events(id);
        QCOMPARE(events.size(), qsizetype(seen.events.size()));
        QCOMPARE(events.last().kind, EventKind::Finished);
        QCOMPARE(m_store->numericsSteps(id), (QList<qint64>{8, 16, 24, 32}));
        QCOMPARE(seen.numericsSteps, (std::vector<std::int64_t>{8, 16, 24, 32}));

        // One checkpoint per epoch; the end of the run holds the same step and adds none.
        const QList<CheckpointInfo> checkpoints = m_store->checkpoints(id);
        QCOMPARE(checkpoints.size(), 2);
        QCOMPARE(checkpoints[0].epoch, 1);
        QCOMPARE(checkpoints[0].step, qint64(16));
        QCOMPARE(checkpoints[1].epoch, 2);
        QCOMPARE(checkpoints[1].step, qint64(32));
        for (const CheckpointInfo& c : checkpoints) {
            QVERIFY2(QFileInfo::exists(c.absolutePath), qPrintable(c.absolutePath));
            QVERIFY2(QDir::isRelativePath(c.path), qPrintable(c.path)); // beside the database
            QCOMPARE(QFileInfo(c.absolutePath).absolutePath(), m_store->checkpointDirectory(id));
        }

        // The weights saved at an epoch's end are those its evaluation measured: a model
        // started from them evaluates to the very same test loss (fp32 to fp32: bit-equal).
        for (int e = 0; e < 2; ++e) {
            RunConfig again = config;
            again.training.seed = 1234; // other initial weights, replaced by the checkpoint's
            again.training.initFrom = checkpoints[e].absolutePath.toStdString();
            Trainer restored(again, *m_backend, data);
            QCOMPARE(restored.evaluate(data.test).loss, seen.epochs[std::size_t(e)].testLoss);
        }
        RunConfig fresh = config;
        fresh.training.seed = 1234;
        Trainer untrained(fresh, *m_backend, data);
        QVERIFY(untrained.evaluate(data.test).loss != seen.epochs[1].testLoss);

        // Deleting the run removes its checkpoint files and their directory.
        QVERIFY(m_store->deleteRun(id).isEmpty());
        QVERIFY(!QFileInfo::exists(checkpoints[0].absolutePath));
        QVERIFY(!QFileInfo::exists(m_store->checkpointDirectory(id)));
    }

    void aStoppedRunKeepsItsWeightsAtTheEnd()
    {
        const RunConfig config = test_support::smallSyntheticConfig(); // checkpoints at the end only
        const DatasetSplits data = loadDatasets(config.data, config.training.seed);
        Trainer trainer(config, *m_backend, data);
        RunRecorder recorder(*m_store, config, *m_backend);
        StopAt stop(trainer, 5);
        recorder.attach(trainer);
        trainer.addObserver(&stop);
        const RunSummary recorded = recorder.finish(trainer.run());
        QCOMPARE(recorded.status, RunStatus::Stopped);
        const RunInfo run = m_store->run(recorder.runId());
        QCOMPARE(run.status, RunStatus::Stopped);
        QVERIFY(run.errorMessage.isEmpty());
        QCOMPARE(run.summary.steps, std::optional<qint64>(5));
        QVERIFY(!run.summary.finalTestAccuracy); // stopped before its first evaluation
        const QList<CheckpointInfo> checkpoints = m_store->checkpoints(recorder.runId());
        QCOMPARE(checkpoints.size(), 1);
        QCOMPARE(checkpoints[0].step, qint64(5));
        QCOMPARE(checkpoints[0].epoch, 1);
        QVERIFY(QFileInfo::exists(checkpoints[0].absolutePath));
    }

    void aCheckpointOfNonFiniteWeightsIsRefusedAndTheRunSaysWhy()
    {
        const RunConfig config = test_support::smallSyntheticConfig(); // checkpoints at the end only
        const DatasetSplits data = loadDatasets(config.data, config.training.seed);
        Trainer trainer(config, *m_backend, data);
        RunRecorder recorder(*m_store, config, *m_backend);
        StopAt stop(trainer, 5);
        recorder.attach(trainer);
        trainer.addObserver(&stop);
        const RunSummary trained = trainer.run();
        QCOMPARE(trained.status, RunStatus::Stopped);
        // A weight poisoned after the last step: the checkpoint at the end must not be written.
        Parameter& poisoned = *trainer.model().parametersInBackwardOrder().front();
        poisoned.master.f32()[3] = NAN;
        poisoned.master.f32()[7] = INFINITY;
        const RunSummary recorded = recorder.finish(trained);
        QVERIFY2(recorded.status == RunStatus::Stopped, recorded.message.c_str()); // refusing is not a failure
        QVERIFY(!recorder.failed());
        QVERIFY(m_store->checkpoints(recorder.runId()).isEmpty());
        const QDir directory(m_store->checkpointDirectory(recorder.runId()));
        QVERIFY(directory.entryList(QDir::Files).isEmpty()); // no file, not even a partial one
        const QList<EventRecord> events = m_store->events(recorder.runId());
        const auto refused = std::find_if(events.begin(), events.end(), [](const EventRecord& e) {
            return e.kind == EventKind::Error && e.message.starts_with(kCheckpointRefused);
        });
        QVERIFY(refused != events.end());
        QCOMPARE(refused->step, std::int64_t(5));
        const QString message = QString::fromStdString(refused->message);
        QVERIFY2(message.contains(QString::fromStdString(poisoned.name)) &&
                     message.contains(QStringLiteral("2 non-finite value(s)")),
                 qPrintable(message));
    }

    void aCheckpointThatCannotBeWrittenFailsTheRun()
    {
        RunConfig config = test_support::smallSyntheticConfig();
        config.training.checkpointEveryEpochs = 1;
        const DatasetSplits data = loadDatasets(config.data, config.training.seed);
        Trainer trainer(config, *m_backend, data);
        RunRecorder recorder(*m_store, config, *m_backend);
        // A file where the run's checkpoint directory should go.
        const QString blocked = m_store->checkpointDirectory(recorder.runId());
        QVERIFY(QDir().mkpath(QFileInfo(blocked).absolutePath()));
        QFile file(blocked);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.close();
        recorder.attach(trainer);
        const RunSummary trained = trainer.run();
        QCOMPARE(trained.status, RunStatus::Stopped); // stopped at the first checkpoint
        QCOMPARE(trained.steps, std::int64_t(16));
        const RunSummary recorded = recorder.finish(trained);
        QVERIFY(recorder.failed());
        QCOMPARE(recorded.status, RunStatus::Failed);
        const RunInfo run = m_store->run(recorder.runId());
        QCOMPARE(run.status, RunStatus::Failed);
        QVERIFY2(run.errorMessage.contains(QStringLiteral("saving the checkpoint of step 16 failed")) &&
                     run.errorMessage.contains(blocked),
                 qPrintable(run.errorMessage));
        QVERIFY(m_store->checkpoints(recorder.runId()).isEmpty());
    }

    void observesWithoutATrainerAndAnUnfinishedRunIsInterrupted()
    {
        const RunConfig config = test_support::smallSyntheticConfig();
        qint64 id = 0;
        {
            RunRecorder recorder(*m_store, config, *m_backend);
            id = recorder.runId();
            for (qint64 n = 1; n <= 7; ++n)
                recorder.onStep(makeStep(n));
            recorder.onEpoch(makeEpoch(1));
        } // e.g. the process unwound
        const RunInfo run = m_store->run(id);
        QCOMPARE(run.status, RunStatus::Interrupted);
        QVERIFY2(run.errorMessage.contains(QStringLiteral("closed before the run finished")),
                 qPrintable(run.errorMessage));
        QCOMPARE(m_store->steps(id).size(), 7);
        QCOMPARE(m_store->epochs(id).size(), 1);
        QVERIFY(m_store->checkpoints(id).isEmpty()); // no trainer, no weights to keep
    }

private:
    std::unique_ptr<QTemporaryDir> m_dir;
    std::unique_ptr<RunStore> m_store;
    std::unique_ptr<Backend> m_backend;
};

QTEST_GUILESS_MAIN(RunRecorderTest)
#include "run_recorder_test.moc"
