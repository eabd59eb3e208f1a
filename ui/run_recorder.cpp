#include "ui/run_recorder.h"

#include "storage/run_store.h"
#include "storage/run_writer.h"

namespace mantissa::ui {

namespace {

storage::RunStatus storedStatus(RunStatus status)
{
    switch (status) {
    case RunStatus::Finished: return storage::RunStatus::Finished;
    case RunStatus::Stopped: return storage::RunStatus::Stopped;
    case RunStatus::Diverged: return storage::RunStatus::Diverged;
    case RunStatus::Running: // run() never returns it
    case RunStatus::Failed: break;
    }
    return storage::RunStatus::Failed;
}

storage::RunFinish runFinish(const RunSummary& s, const QString& message)
{
    storage::RunFinish finish;
    finish.status = storedStatus(s.status);
    finish.errorMessage = message;
    // Before the first evaluation the engine's accuracies are placeholders: leave them NULL.
    if (s.epochs > 0) {
        finish.summary.finalTrainLoss = s.trainLoss;
        finish.summary.bestTestAccuracy = s.bestTestAccuracy;
        finish.summary.finalTestAccuracy = s.testAccuracy;
    }
    finish.summary.steps = s.steps;
    finish.summary.skippedSteps = s.skippedSteps;
    finish.summary.finalLossScale = s.finalLossScale;
    if (s.samplesPerSecond > 0)
        finish.summary.samplesPerSecond = s.samplesPerSecond;
    finish.wallSeconds = s.wallSeconds;
    finish.peakMemoryBytes = static_cast<qint64>(s.peakBytes);
    return finish;
}

} // namespace

RunRecorder::RunRecorder(const RecordingTarget& target, const RunConfig& config, const Backend& backend,
                         Trainer& trainer)
    : m_trainer(trainer)
{
    storage::StoreOptions options;
    options.quickCheck = false; // the UI thread's store checked the file when it opened it
    m_store = std::make_unique<storage::RunStore>(target.databasePath, options);
    storage::NewRun run;
    run.configJson = QString::fromStdString(runConfigToJson(config));
    run.preset = QString::fromStdString(config.name);
    run.precision = QString::fromStdString(precisionModeName(config.precision));
    run.device = QString::fromStdString(backend.name());
    run.groupId = target.groupId;
    run.tags = {QStringLiteral("gui")};
    m_runId = m_store->createRun(run);
    m_runName = m_store->run(m_runId).name;
    try {
        m_writer = std::make_unique<storage::RunWriter>(m_store->path(), m_runId);
    } catch (const std::exception& error) {
        storage::RunFinish failed;
        failed.status = storage::RunStatus::Failed;
        failed.errorMessage = QString::fromLocal8Bit(error.what());
        m_store->finishRun(m_runId, failed);
        throw;
    }
}

RunRecorder::~RunRecorder() = default;

void RunRecorder::onStep(const StepRecord& record)
{
    m_writer->onStep(record);
    stopIfFailed();
}

void RunRecorder::onEpoch(const EpochRecord& record)
{
    m_writer->onEpoch(record);
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

void RunRecorder::stopIfFailed()
{
    if (m_writer->failed())
        m_trainer.requestStop();
}

QString RunRecorder::finish(const RunSummary& summary)
{
    const bool explained = summary.status == RunStatus::Diverged || summary.status == RunStatus::Failed;
    const QString message = explained ? QString::fromStdString(summary.message) : QString();
    if (!m_writer->failed())
        m_writer->finish(runFinish(summary, message));
    if (!m_writer->failed())
        return {};
    const QString error = m_writer->errorMessage();
    RunSummary failed = summary;
    failed.status = RunStatus::Failed;
    try {
        m_store->finishRun(m_runId, runFinish(failed, error));
    } catch (const std::exception&) {
        // The database is gone or full: the writer already said why.
    }
    return error;
}

} // namespace mantissa::ui
