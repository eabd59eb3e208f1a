#pragma once
// One training run recorded in the run database: the part `train` and `compare` share.
// The recording itself is storage::RunRecorder's (the same for the GUI); this adds the
// terminal: progress on stderr, Ctrl-C, the exit code and the JSON summary line. A
// recording that fails mid-run (disk full, database gone) stops the trainer and the run
// ends "failed" with the reason.
#include "engine/backend/backend.h"
#include "engine/config/run_config.h"
#include "engine/data/dataset.h"
#include "engine/observe/task_metric.h"
#include "engine/train/trainer.h"
#include "storage/run_store.h"

#include <QString>

#include <nlohmann/json.hpp>

#include <optional>

namespace mantissa::cli {

struct RecordingOptions {
    QString name;                  // empty: "<config name>-<precision>-<n>"
    std::optional<qint64> groupId; // comparison group
    std::optional<qint64> sweepId; // sweep, and the run's index in it
    std::optional<int> sweepIndex;
    bool interactive = false; // live progress bar on stderr
    // Rank 0 of a data-parallel run (the only rank that records): the replicas' collectives.
    DataParallel* ranks = nullptr;
    // A fork: the saved training state it continues (Trainer::resumeFrom) and its parent.
    QString resumeFrom;
    std::optional<storage::RunLineage> parent;
};

struct RecordedRun {
    qint64 runId = 0;
    QString name;
    PrecisionMode precision = PrecisionMode::Fp32;
    TaskMetric metric = TaskMetric::Accuracy;
    RunSummary summary;           // as recorded: the trainer's, or failed when recording failed
    bool recordingFailed = false; // the database stopped accepting rows, or a checkpoint failed

    // 0 finished or stopped by the user, 1 diverged or failed (kExitRunFailed).
    int exitCode() const;
    // The JSON summary line: status, train_loss, test_accuracy, steps, skipped_steps,
    // final_loss_scale, samples_per_s, wall_s, run_id (test_rmse for regression, message when
    // there is one).
    nlohmann::json toJson() const;
};

// Trains `config` as a new run in `store`, stored with data.task resolved (withResolvedTask).
// Throws (ConfigError, StorageError, IoError ...) only for problems found before training
// starts, a fork's state that does not fit the model included; then nothing but the run row
// exists, and it is marked failed. Problems during training end up in the returned status.
RecordedRun trainRecorded(storage::RunStore& store, const RunConfig& config, Backend& backend,
                          const DatasetSplits& data, const RecordingOptions& options);

// A data-parallel replica other than rank 0: trains with the others and records nothing (rank
// 0 records the run for all of them); messages go to stderr prefixed with the rank.
RunSummary trainReplica(const RunConfig& config, Backend& backend, const DatasetSplits& data, DataParallel& ranks);

} // namespace mantissa::cli
