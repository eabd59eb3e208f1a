#include "storage/run_recorder.h"

#include "engine/util/check.h"
#include "storage/device_description.h"
#include "storage/run_store.h"
#include "storage/run_writer.h"
#include "storage/storage_error.h"

#include <QDir>
#include <QFile>

namespace mantissa::storage {

namespace {

NewRun newRun(const RunConfig& config, const Backend& backend, const RunMetadata& metadata)
{
    NewRun run;
    run.name = metadata.name;
    run.configJson = QString::fromStdString(runConfigToJson(config));
    run.preset = QString::fromStdString(config.name);
    run.precision = QString::fromStdString(precisionModeName(config.precision));
    run.device = deviceDescription(backend);
    // A data-parallel run is recorded once, by rank 0, for all its replicas.
    if (config.distributed.worldSize > 1) {
        run.device += QStringLiteral(" x %1 ranks (data parallel)").arg(config.distributed.worldSize);
        run.worldSize = config.distributed.worldSize;
    }
    run.kernels = QString::fromStdString(backend.kernelPaths());
    run.groupId = metadata.groupId;
    run.sweepId = metadata.sweepId;
    run.sweepIndex = metadata.sweepIndex;
    run.tags = metadata.tags;
    run.notes = metadata.notes;
    run.dataFingerprint = metadata.dataFingerprint;
    if (!config.model.onnx.empty()) {
        // The file the Trainer has just compiled, kept with the run.
        run.modelSource = QString::fromStdString(config.model.onnx);
        QFile file(run.modelSource);
        if (!file.open(QIODevice::ReadOnly))
            throw StorageError(StorageError::Kind::Io, run.modelSource,
                               QStringLiteral("cannot read the model file to store it: %1").arg(file.errorString()));
        run.modelBytes = file.readAll();
    }
    run.dataPreparation = metadata.dataPreparation;
    run.parent = metadata.parent;
    return run;
}

} // namespace

RunRecorder::RunRecorder(RunStore& store, const RunConfig& config, const Backend& backend, const RunMetadata& metadata)
    : m_store(store), m_backend(backend), m_checkpointEveryEpochs(config.training.checkpointEveryEpochs)
{
    m_runId = m_store.createRun(newRun(config, backend, metadata));
    m_runName = m_store.run(m_runId).name;
    try {
        m_writer = std::make_unique<RunWriter>(m_store.path(), m_runId);
    } catch (const std::exception& error) {
        RunSummary failed;
        failed.status = RunStatus::Failed;
        failed.message = error.what();
        m_store.finishRun(m_runId, failed);
        throw;
    }
}

RunRecorder::~RunRecorder() = default;

void RunRecorder::attach(Trainer& trainer)
{
    m_trainer = &trainer;
    trainer.addObserver(this);
}

void RunRecorder::onStep(const StepRecord& record)
{
    m_lastStep = record.step;
    m_lastStepEpoch = record.epoch;
    m_writer->onStep(record);
    stopIfFailed();
}

void RunRecorder::onEpoch(const EpochRecord& record)
{
    m_writer->onEpoch(record);
    if (m_trainer && m_checkpointEveryEpochs > 0 && record.epoch % m_checkpointEveryEpochs == 0)
        saveCheckpoint(record.epoch);
    stopIfFailed();
}

void RunRecorder::onEvent(const EventRecord& record)
{
    m_writer->onEvent(record);
    stopIfFailed();
}

void RunRecorder::onNumerics(const NumericsRecord& record)
{
    m_writer->onNumerics(record);
    stopIfFailed();
}

void RunRecorder::onStatePoint(std::int64_t)
{
    // Every step up to here has been read back and none is queued: the training state is whole.
    if (m_trainer)
        saveCheckpoint(m_lastStepEpoch);
    stopIfFailed();
}

void RunRecorder::onShadow(const ShadowRecord& record)
{
    m_writer->onShadow(record);
    stopIfFailed();
}

bool RunRecorder::failed() const { return m_writer->failed() || !m_checkpointError.isEmpty(); }

QString RunRecorder::errorMessage() const { return m_writer->failed() ? m_writer->errorMessage() : m_checkpointError; }

void RunRecorder::stopIfFailed()
{
    if (m_trainer && failed())
        m_trainer->requestStop();
}

void RunRecorder::saveCheckpoint(int epoch)
{
    if (failed() || m_lastStep == 0 || m_lastStep == m_lastCheckpointStep)
        return;
    const QString directory = m_store.checkpointDirectory(m_runId);
    const QString path = QDir(directory).filePath(QStringLiteral("epoch-%1-step-%2.ckpt").arg(epoch).arg(m_lastStep));
    try {
        if (!QDir().mkpath(directory))
            throw IoError(directory.toStdString() + ": cannot create the run's checkpoint directory");
        // Between epochs (onEpoch) and after run() every step has been read back, so the
        // weights saved are those the epoch's evaluation measured.
        m_trainer->saveCheckpoint(path.toStdString());
    } catch (const NonFiniteCheckpoint& refused) {
        // Not a failure of the run: the run records why it kept no checkpoint here and goes on.
        EventRecord event;
        event.kind = EventKind::Error;
        event.step = m_lastStep;
        event.message = std::string(kCheckpointRefused) + refused.what();
        m_writer->onEvent(event);
        return;
    } catch (const std::exception& error) {
        m_checkpointError = QStringLiteral("saving the checkpoint of step %1 failed: %2")
                                .arg(m_lastStep)
                                .arg(QString::fromLocal8Bit(error.what()));
        return;
    }
    m_writer->addCheckpoint(path, m_lastStep, epoch);
    m_lastCheckpointStep = m_lastStep;
}

RunSummary RunRecorder::finish(const RunSummary& summary)
{
    RunSummary recorded = summary;
    if (m_finished)
        return recorded;
    m_finished = true;
    // Diverged and failed runs keep no weights: they are non-finite or of an unknown state.
    const bool weightsWorthKeeping = summary.status == RunStatus::Finished || summary.status == RunStatus::Stopped;
    if (m_trainer && weightsWorthKeeping)
        saveCheckpoint(m_lastStepEpoch);
    if (!m_checkpointError.isEmpty() && !m_writer->failed()) {
        recorded.status = RunStatus::Failed;
        recorded.message = m_checkpointError.toStdString();
    }
    if (!m_writer->failed()) {
        // By now the backend knows which kernel implementations the run used, beyond the plan
        // recorded when it started. If the database refuses this update it refuses the finish
        // too, which reports it; the plan stays.
        try {
            m_store.setKernels(m_runId, QString::fromStdString(m_backend.kernelPaths()));
        } catch (const std::exception&) {}
        m_writer->finish(recorded);
    }
    if (!m_writer->failed())
        return recorded;
    recorded.status = RunStatus::Failed;
    recorded.message = m_writer->errorMessage().toStdString();
    // The writer marked the run failed if the database still took an update; add the
    // summary if it takes one more. A database that is gone or full stays as it is.
    try {
        m_store.finishRun(m_runId, recorded);
    } catch (const std::exception&) {}
    return recorded;
}

} // namespace mantissa::storage
