#include "cli/recorded_run.h"

#include "cli/device_description.h"
#include "cli/exit_codes.h"
#include "cli/interrupt.h"
#include "cli/progress_printer.h"
#include "storage/run_writer.h"

#include <cstdio>

namespace mantissa::cli {

namespace {

// Forwards the trainer's records to the writer and stops the trainer the moment the
// writer fails: training on without recording would spend hours on a run nobody can see.
class RecordingObserver final : public TrainingObserver {
public:
    RecordingObserver(storage::RunWriter& writer, Trainer& trainer) : m_writer(writer), m_trainer(trainer) {}

    void onStep(const StepRecord& record) override
    {
        m_writer.onStep(record);
        stopIfFailed();
    }
    void onEpoch(const EpochRecord& record) override
    {
        m_writer.onEpoch(record);
        stopIfFailed();
    }
    void onEvent(const EventRecord& record) override
    {
        m_writer.onEvent(record);
        stopIfFailed();
    }
    void onNumerics(const NumericsRecord& record) override
    {
        m_writer.onNumerics(record);
        stopIfFailed();
    }

private:
    void stopIfFailed()
    {
        if (m_writer.failed())
            m_trainer.requestStop();
    }

    storage::RunWriter& m_writer;
    Trainer& m_trainer;
};

storage::RunStatus recordedStatus(RunStatus status)
{
    switch (status) {
    case RunStatus::Running: break; // run() never returns it
    case RunStatus::Finished: return storage::RunStatus::Finished;
    case RunStatus::Stopped: return storage::RunStatus::Stopped;
    case RunStatus::Diverged: return storage::RunStatus::Diverged;
    case RunStatus::Failed: return storage::RunStatus::Failed;
    }
    return storage::RunStatus::Failed;
}

storage::RunFinish runFinish(const RunSummary& s, storage::RunStatus status, const QString& message)
{
    storage::RunFinish finish;
    finish.status = status;
    finish.errorMessage = message;
    // Before the first evaluation the engine's accuracies are placeholders, not zeros:
    // leave them NULL ("not known"), and let the writer take the loss from the last step.
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
    finish.peakMemoryBytes = qint64(s.peakBytes);
    return finish;
}

storage::NewRun newRun(const RunConfig& config, const Backend& backend, const RecordingOptions& options)
{
    storage::NewRun run;
    run.name = options.name;
    run.configJson = QString::fromStdString(runConfigToJson(config));
    run.preset = QString::fromStdString(config.name);
    run.precision = QString::fromStdString(precisionModeName(config.precision));
    run.device = deviceDescription(backend);
    run.groupId = options.groupId;
    return run;
}

} // namespace

int RecordedRun::exitCode() const
{
    const bool ok = status == storage::RunStatus::Finished || status == storage::RunStatus::Stopped;
    return ok ? kExitOk : kExitRunFailed;
}

nlohmann::json RecordedRun::toJson() const
{
    nlohmann::json line = {
        {"status", storage::runStatusName(status).toStdString()},
        {"train_loss", summary.trainLoss},
        {"test_accuracy", summary.testAccuracy},
        {"steps", summary.steps},
        {"skipped_steps", summary.skippedSteps},
        {"final_loss_scale", summary.finalLossScale},
        {"samples_per_s", summary.samplesPerSecond},
        {"wall_s", summary.wallSeconds},
        {"run_id", runId},
    };
    if (!message.isEmpty())
        line["message"] = message.toStdString();
    return line;
}

RecordedRun trainRecorded(storage::RunStore& store, const RunConfig& config, Backend& backend,
                          const DatasetSplits& data, const RecordingOptions& options)
{
    Trainer trainer(config, backend, data);
    std::fprintf(stderr, "%lld training and %lld test samples from %s; loss scaling: %s\n",
                 static_cast<long long>(data.train.size()), static_cast<long long>(data.test.size()),
                 data.directory.empty() ? "synthetic data" : data.directory.c_str(),
                 trainer.scaler().describe().c_str());

    // The run is created only now that the config, data and model are known to be good,
    // so a typo does not leave a run behind.
    RecordedRun result;
    result.precision = config.precision;
    result.runId = store.createRun(newRun(config, backend, options));
    result.name = store.run(result.runId).name;
    std::fprintf(stderr, "run %lld (%s) in %s\n", static_cast<long long>(result.runId), qPrintable(result.name),
                 qPrintable(store.path()));
    std::fflush(stderr);

    std::optional<storage::RunWriter> writer;
    try {
        writer.emplace(store.path(), result.runId);
    } catch (const std::exception& error) {
        storage::RunFinish failed;
        failed.status = storage::RunStatus::Failed;
        failed.errorMessage = QString::fromLocal8Bit(error.what());
        store.finishRun(result.runId, failed);
        throw;
    }

    RecordingObserver recording(*writer, trainer);
    ProgressPrinter progress(trainer.totalSteps(), options.interactive);
    trainer.addObserver(&recording);
    trainer.addObserver(&progress);
    InterruptHandler::setActiveTrainer(&trainer);
    if (InterruptHandler::interrupted())
        trainer.requestStop(); // Ctrl-C came before the handler knew this trainer
    result.summary = trainer.run();
    InterruptHandler::setActiveTrainer(nullptr);
    progress.finish();
    if (trainer.graphSteps() > 0)
        std::fprintf(stderr, "steps: %lld replayed from the step graph (%s), %lld op by op\n",
                     static_cast<long long>(trainer.graphSteps()), trainer.graphStatus().c_str(),
                     static_cast<long long>(trainer.eagerSteps()));
    else
        std::fprintf(stderr, "steps: op by op; %s\n", trainer.graphStatus().c_str());

    result.status = recordedStatus(result.summary.status);
    const bool explained = result.status == storage::RunStatus::Diverged || result.status == storage::RunStatus::Failed;
    if (explained)
        result.message = QString::fromStdString(result.summary.message);
    if (!writer->failed())
        writer->finish(runFinish(result.summary, result.status, result.message));
    if (writer->failed()) {
        result.recordingFailed = true;
        result.status = storage::RunStatus::Failed;
        result.message = writer->errorMessage();
        std::fprintf(stderr, "recording run %lld failed: %s\n", static_cast<long long>(result.runId),
                     qPrintable(result.message));
        // The writer marked the run failed if the database still took an update; add the
        // summary if it takes one more. A database that is gone stays as it is.
        try {
            store.finishRun(result.runId, runFinish(result.summary, result.status, result.message));
        } catch (const std::exception&) {
        }
    }
    return result;
}

} // namespace mantissa::cli
