#pragma once
// The value types of the run store: what a caller passes in to create and finish a run,
// and what the read API hands back. Plain structs; RunStore and RunWriter do the work.
// Statuses and the summary a run ends with are the engine's (engine/train/run_summary.h).
#include "engine/numerics/tensor_stats.h"
#include "engine/train/run_summary.h"
#include "engine/util/build_identity.h"

#include <QDateTime>
#include <QList>
#include <QString>
#include <QStringList>

#include <optional>

namespace mantissa::storage {

// The engine's statuses are the store's (RunInfo::status, runs.status); also named here, where
// readers of the store look for them.
using mantissa::RunStatus;

// The summary columns of a runs row, as stored. A field is unset (NULL, "not known") where
// the run never reached it: a run still running, or one interrupted before its first
// evaluation. Runs end with the engine's RunSummary (RunStore::finishRun, RunWriter::finish);
// this is how the store hands that summary back, with the gaps a crash leaves.
struct StoredSummary {
    std::optional<double> finalTrainLoss;
    std::optional<double> bestTestAccuracy;  // in [0, 1]
    std::optional<double> finalTestAccuracy; // in [0, 1]
    // The last epoch's test loss and the lowest: what regression's RMSE and a language model's
    // bits per character follow from (engine/observe/task_metric.h).
    std::optional<double> finalTestLoss, bestTestLoss;
    std::optional<qint64> steps;        // optimizer steps, skipped ones included
    std::optional<qint64> skippedSteps; // steps whose gradients were non-finite
    std::optional<double> finalLossScale;
    std::optional<double> samplesPerSecond; // training throughput over the whole run
};

// A fork's place in its parent (mantissa-cli fork): it continued `runId`'s training state
// saved after `step`. runId is unset when the parent has been deleted since (or was not
// imported with the fork); the step stays.
struct RunLineage {
    std::optional<qint64> runId;
    qint64 step = 0;
};

// What createRun() needs. Everything but the config may be empty.
struct NewRun {
    QString name;       // empty: generated as "<preset>-<precision>-<n>", e.g. "mlp-mixed-fp16-3"
    QString configJson; // the full run config (runConfigToJson), stored verbatim
    QString preset;     // preset name or config file stem
    QString precision;  // "fp32", "mixed-fp16", ... (precisionModeName)
    QString device;     // "cpu: <model>" or "cuda: <gpu>, driver, CUDA and cuDNN versions"
    QString kernels;    // Backend::kernelPaths(): "bf16: native, oneDNN ...\nfp16: emulated ..."
    QString engineVersion = QString::fromStdString(buildIdentity()); // the build that records the run
    QStringList tags;
    QString notes;
    std::optional<qint64> groupId; // comparison group (RunStore::createGroup)
    QString uid;                   // empty: a new UUID; an imported run keeps its own
    std::optional<qint64> sweepId; // the sweep it belongs to (RunStore::createSweep)
    std::optional<int> sweepIndex; // its position in the sweep (SweepRun::index)
    int worldSize = 1;             // ranks of a data-parallel run (config.distributed.world_size)
    QString dataFingerprint;       // DatasetSplits::fingerprint; empty: not known
    // The model file of an imported model (model.onnx): where it was read from and its bytes,
    // stored once per content. Empty: the model is a layer list.
    QString modelSource;
    QByteArray modelBytes;
    QString dataPreparation;          // dataPreparationText() (engine/data/dataset.h); empty: not known
    std::optional<RunLineage> parent; // a fork: the run and step it started from
};

// One row of the runs table with its tags.
struct RunInfo {
    qint64 id = 0;
    QString name;
    RunStatus status = RunStatus::Running;
    QDateTime createdAt, finishedAt; // UTC; finishedAt is invalid while running
    QString configJson, preset, precision, device, engineVersion;
    QString kernels; // which path each 16-bit type took (Backend::kernelPaths), "" before schema 5
    std::optional<double> wallSeconds;
    std::optional<qint64> peakMemoryBytes;
    QStringList tags; // sorted
    QString notes;
    std::optional<qint64> groupId;
    StoredSummary summary;
    QString errorMessage;
    // The process that writes (or wrote) the run: crash recovery uses them.
    qint64 writerPid = 0;
    QString writerHost;
    QDateTime heartbeatAt; // last commit by the writer
    QString uid;           // empty for runs recorded before schema version 5
    std::optional<qint64> sweepId;
    std::optional<int> sweepIndex;
    int worldSize = 1;       // ranks that trained it (data parallel); 1 for a single process
    QString dataFingerprint; // of the data it saw (DatasetSplits::fingerprint); "" before schema 9
    // An imported model's file: the path it was read from and the SHA-256 (hex) of the bytes the
    // store keeps (RunStore::modelFile); "" for a layer-list model and before schema 10.
    QString modelSource, modelSha256;
    // How that data was prepared (its normalisation statistics, dataPreparationText); "" for runs
    // recorded before it was stored. Kept in the data_fingerprint column after the fingerprint's
    // line (run_sql.h), so that no schema change was needed.
    QString dataPreparation;
    std::optional<RunLineage> parent; // set for a fork only
};

// listRuns() filters; an empty field does not filter.
struct RunFilter {
    std::optional<RunStatus> status;
    QString preset;
    QString precision;
    std::optional<qint64> groupId;
    QString tag;
    std::optional<qint64> sweepId;
    std::optional<qint64> parentRunId; // the forks of this run (RunInfo::parent)
    int limit = 0;                     // 0 = all
};

// Per-step rows as columns, ready for plotting: QCustomPlot and most plotting code take
// QVector<double> keys and values, so every numeric column is double (exact for the
// stored floats and for step counts below 2^53). Non-finite values read back as NaN
// where SQLite stored NULL (SQLite turns NaN into NULL) and as +-inf otherwise.
struct StepSeries {
    QList<double> step, epoch, loss, learningRate, lossScale, gradNorm, samplesPerSecond, elapsedSeconds;
    QList<double> gradAmax; // NaN for steps recorded before schema version 4
    // A data-parallel run's 16-bit all-reduce (StepRecord::allReduceFlushed): values the division
    // flushed to zero and values the sum overflowed, per step; NaN for every other run and for
    // steps recorded before schema version 8.
    QList<double> allReduceFlushed, allReduceOverflowed;
    QList<bool> skipped;

    qsizetype size() const { return step.size(); }
    bool isEmpty() const { return step.isEmpty(); }
};

// One tensor's exponent histograms over a run's sampled steps: the data of a heatmap
// (steps on x, binary exponent on y). counts[i] belongs to step[i].
struct HistogramSeries {
    QList<qint64> step;
    QList<double> lossScale;
    QList<bool> scaledGradients;
    QList<ExponentHistogram> counts;

    qsizetype size() const { return step.size(); }
};

struct CheckpointInfo {
    qint64 id = 0;
    QString path;         // as stored: relative to the database's directory when inside it
    QString absolutePath; // resolved against the database's directory
    qint64 step = 0;
    int epoch = 0;
    QDateTime createdAt;
};

// A sweep: a base config times axes times seeds (engine/sweep/sweep_spec.h), its runs
// linked by runs.sweep_id and ordered by runs.sweep_index.
struct NewSweep {
    QString uid; // empty: a new UUID; the same in every database that holds runs of the sweep
    QString name;
    QString specJson; // sweepSpecToJson: the self-contained spec
    int runCount = 0;
};

struct SweepInfo {
    qint64 id = 0;
    QString uid, name, specJson;
    int runCount = 0;
    QDateTime createdAt;
};

// What RunStore::importRuns did with one source database.
struct ImportResult {
    int imported = 0;       // runs added
    int alreadyPresent = 0; // runs whose uid the database already held
    int stillRunning = 0;   // runs not imported because their writer may still be writing them
    QStringList sweeps;     // names of the sweeps created for the imported runs
};

struct GroupInfo {
    qint64 id = 0;
    QString name;
    QDateTime createdAt;
};

} // namespace mantissa::storage
