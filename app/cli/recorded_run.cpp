#include "cli/recorded_run.h"

#include "engine/distributed/data_parallel.h"

#include "cli/exit_codes.h"
#include "cli/interrupt.h"
#include "cli/progress_printer.h"
#include "engine/distributed/data_parallel.h"
#include "engine/observe/task_metric.h"
#include "storage/run_recorder.h"

#include <cstdio>

namespace mantissa::cli {

int RecordedRun::exitCode() const
{
    const bool ok = summary.status == RunStatus::Finished || summary.status == RunStatus::Stopped;
    return ok ? kExitOk : kExitRunFailed;
}

nlohmann::json RecordedRun::toJson() const
{
    nlohmann::json line = {
        {"status", runStatusName(summary.status)},
        {"train_loss", summary.trainLoss},
        {"test_accuracy", summary.testAccuracy},
        {"steps", summary.steps},
        {"skipped_steps", summary.skippedSteps},
        {"final_loss_scale", summary.finalLossScale},
        {"samples_per_s", summary.samplesPerSecond},
        {"wall_s", summary.wallSeconds},
        {"run_id", runId},
    };
    if (metric == TaskMetric::Rmse)
        line["test_rmse"] = taskMetricValue(metric, summary.testLoss, NAN);
    if (metric == TaskMetric::BitsPerCharacter)
        line["test_bits_per_character"] = taskMetricValue(metric, summary.testLoss, NAN);
    if (summary.status == RunStatus::Diverged || summary.status == RunStatus::Failed)
        line["message"] = summary.message;
    return line;
}

RecordedRun trainRecorded(storage::RunStore& store, const RunConfig& given, Backend& backend, const DatasetSplits& data,
                          const RecordingOptions& options)
{
    const RunConfig config = withResolvedTask(given, data);
    Trainer trainer(config, backend, data, options.ranks);
    if (!options.resumeFrom.isEmpty())
        std::fprintf(stderr, "continuing: %s\n", trainer.resumeFrom(options.resumeFrom.toStdString()).c_str());
    std::fprintf(stderr, "%lld training and %lld test samples from %s; loss scaling: %s\n",
                 static_cast<long long>(data.train.size()), static_cast<long long>(data.test.size()),
                 data.directory.empty() ? "synthetic data" : data.directory.c_str(),
                 trainer.scaler().describe().c_str());

    // The run is created only now that the config, data and model are known to be good,
    // so a typo does not leave a run behind.
    storage::RunMetadata metadata;
    metadata.name = options.name;
    metadata.groupId = options.groupId;
    metadata.sweepId = options.sweepId;
    metadata.sweepIndex = options.sweepIndex;
    metadata.dataFingerprint = QString::fromStdString(data.fingerprint);
    metadata.dataPreparation = QString::fromStdString(dataPreparationText(data));
    metadata.parent = options.parent;
    storage::RunRecorder recorder(store, config, backend, metadata);
    RecordedRun result;
    result.precision = config.precision;
    result.metric = taskMetricOf(config);
    result.runId = recorder.runId();
    result.name = recorder.runName();
    std::fprintf(stderr, "run %lld (%s) in %s\n", static_cast<long long>(result.runId), qPrintable(result.name),
                 qPrintable(store.path()));
    if (options.ranks)
        std::fprintf(stderr,
                     "data parallel: %d ranks (%s), all-reduce: %s, batch %lld per rank; rank 0 records the run\n",
                     options.ranks->worldSize(), options.ranks->communicator().description().c_str(),
                     options.ranks->allReducePath().c_str(),
                     static_cast<long long>(config.training.batchSize / options.ranks->worldSize()));
    std::fflush(stderr);

    ProgressPrinter progress(trainer.totalSteps(), options.interactive);
    progress.showMetric(taskMetricOf(config));
    recorder.attach(trainer);
    trainer.addObserver(&progress);
    InterruptHandler::setActiveTrainer(&trainer);
    if (InterruptHandler::interrupted())
        trainer.requestStop(); // Ctrl-C came before the handler knew this trainer
    const RunSummary trained = trainer.run();
    InterruptHandler::setActiveTrainer(nullptr);
    progress.finish();
    if (trainer.graphSteps() > 0)
        std::fprintf(stderr, "steps: %lld replayed from the step graph (%s), %lld op by op\n",
                     static_cast<long long>(trainer.graphSteps()), trainer.graphStatus().c_str(),
                     static_cast<long long>(trainer.eagerSteps()));
    else
        std::fprintf(stderr, "steps: op by op; %s\n", trainer.graphStatus().c_str());

    result.summary = recorder.finish(trained);
    result.recordingFailed = recorder.failed();
    if (result.recordingFailed)
        std::fprintf(stderr, "recording run %lld failed: %s\n", static_cast<long long>(result.runId),
                     result.summary.message.c_str());
    return result;
}

RunSummary trainReplica(const RunConfig& config, Backend& backend, const DatasetSplits& data, DataParallel& ranks)
{
    Trainer trainer(config, backend, data, &ranks);
    // Ctrl-C on any rank stops every rank: the trainer shares the request at its next step.
    InterruptHandler::setActiveTrainer(&trainer);
    if (InterruptHandler::interrupted())
        trainer.requestStop();
    const RunSummary summary = trainer.run();
    InterruptHandler::setActiveTrainer(nullptr);
    if (summary.status == RunStatus::Failed)
        std::fprintf(stderr, "rank %d of %d failed: %s\n", ranks.rank(), ranks.worldSize(), summary.message.c_str());
    return summary;
}

} // namespace mantissa::cli
