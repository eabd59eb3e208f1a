#include "ui/training_worker.h"

#include "engine/data/dataset.h"
#include "engine/train/trainer.h"
#include "engine/train/training_backend.h"
#include "engine/util/check.h"
#include "storage/run_recorder.h"
#include "storage/run_store.h"
#include "ui/record_buffer.h"

namespace mantissa::ui {

TrainingWorker::TrainingWorker(RecordBuffer* buffer) : m_buffer(buffer) {}

void TrainingWorker::resetControls()
{
    m_stopRequested = false;
    m_paused = false;
}

void TrainingWorker::requestStop()
{
    m_stopRequested = true;
    std::lock_guard lock(m_trainerMutex);
    if (m_trainer)
        m_trainer->requestStop();
}

void TrainingWorker::setPaused(bool paused)
{
    m_paused = paused;
    std::lock_guard lock(m_trainerMutex);
    if (m_trainer)
        m_trainer->setPaused(paused);
}

void TrainingWorker::train(const RunConfig& config, const RecordingTarget& target)
{
    RunSummary failed;
    failed.status = RunStatus::Failed;
    try {
        BackendSelection selection = selectBackend(config);
        const DatasetSplits data = loadDatasets(config.data, config.training.seed);
        if (m_stopRequested) {
            RunSummary stopped;
            stopped.status = RunStatus::Stopped;
            stopped.message = "stopped before training started";
            m_buffer->markEnded(stopped);
            return;
        }
        const RunConfig resolved = withResolvedTask(config, data);
        Trainer trainer(resolved, *selection.backend, data);
        if (!target.resumeFrom.isEmpty())
            trainer.resumeFrom(target.resumeFrom.toStdString()); // before the run exists: a misfit leaves none
        // The run row is created only once config, data and model are known to be good, so
        // a typo leaves no run behind (the CLI does the same).
        std::unique_ptr<storage::RunStore> store;
        std::unique_ptr<storage::RunRecorder> recorder;
        if (!target.databasePath.isEmpty()) {
            storage::StoreOptions options;
            options.quickCheck = false; // the UI thread's store checked the file when it opened it
            store = std::make_unique<storage::RunStore>(target.databasePath, options);
            storage::RunMetadata metadata;
            metadata.groupId = target.groupId;
            metadata.name = target.runName;
            if (!target.resumeFrom.isEmpty())
                metadata.parent = storage::RunLineage{target.parentRunId, target.parentStep};
            metadata.tags = {QStringLiteral("gui")};
            metadata.dataFingerprint = QString::fromStdString(data.fingerprint);
            metadata.dataPreparation = QString::fromStdString(dataPreparationText(data));
            recorder = std::make_unique<storage::RunRecorder>(*store, resolved, *selection.backend, metadata);
        }
        RunStartInfo info;
        info.totalSteps = trainer.totalSteps();
        info.stepsPerEpoch = trainer.stepsPerEpoch();
        info.trainSamples = data.train.size();
        info.testSamples = data.test.size();
        info.device = QString::fromStdString(selection.backend->name());
        info.deviceNote = QString::fromStdString(selection.reason);
        info.kernels = QString::fromStdString(selection.backend->kernelPaths());
        info.scaler = QString::fromStdString(trainer.scaler().describe());
        info.task = data.task;
        info.dataFingerprint = QString::fromStdString(data.fingerprint);
        if (recorder) {
            info.runId = recorder->runId();
            info.runName = recorder->runName();
        }
        m_buffer->markStarted(info);
        RunSummary summary = runTrainer(trainer, recorder.get());
        if (recorder) {
            summary = recorder->finish(summary);
            if (recorder->failed())
                summary.message = "recording the run failed: " + summary.message;
        }
        m_buffer->markEnded(summary);
    } catch (const Error& e) {
        failed.message = e.what();
        m_buffer->markEnded(failed, QString::fromStdString(e.what()));
    } catch (const std::exception& e) {
        // Not a user error (bad_alloc, a bug): still reported, never a crash of the UI.
        failed.message = e.what();
        m_buffer->markEnded(failed, tr("unexpected error: %1").arg(e.what()));
    }
}

RunSummary TrainingWorker::runTrainer(Trainer& trainer, storage::RunRecorder* recorder)
{
    trainer.addObserver(m_buffer);
    if (recorder)
        recorder->attach(trainer);
    // Unregisters the trainer however run() leaves, so stop() never reaches a dead one.
    struct Registration {
        TrainingWorker* worker;
        ~Registration()
        {
            std::lock_guard lock(worker->m_trainerMutex);
            worker->m_trainer = nullptr;
        }
    };
    {
        std::lock_guard lock(m_trainerMutex);
        m_trainer = &trainer;
        trainer.setPaused(m_paused);
        if (m_stopRequested)
            trainer.requestStop();
    }
    Registration registration{this};
    return trainer.run();
}

} // namespace mantissa::ui
