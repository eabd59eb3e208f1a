#pragma once
// Everything a report shows, read from the run store once: the runs (with their parsed
// configs and model tables), their step, epoch and event rows, and the machine writing
// the report. The renderers read only this, never the database.
#include "engine/config/run_config.h"
#include "engine/model/model_validation.h"
#include "engine/observe/task_metric.h"
#include "report/advice_summary.h"
#include "report/machine_info.h"
#include "report/storage_names.h"
#include "sweep/sweep_statistics.h"

#include <QDateTime>
#include <QList>
#include <QString>

#include <memory>
#include <optional>

namespace mantissa {
struct ModelFileDescription; // engine/model/model_file.h, which is not installed
}

namespace mantissa::report {

struct RunData {
    RunInfo info;
    std::optional<RunConfig> config; // unset when the stored JSON no longer parses
    QString configError;             // why, when it does not
    ModelReport model;               // the layer table; empty without a config
    // An imported model's run (model.onnx): its nodes under the run's precision, read from the
    // file the run store keeps (RunStore::modelFilePath); null for a layer list, or where it
    // cannot be read (modelFileError says why).
    std::shared_ptr<const ModelFileDescription> modelFile;
    QString modelFileError;
    StepSeries steps;
    QList<EpochRecord> epochs;
    QList<EventRecord> events;
    QList<RankThroughput> ranks;      // a data-parallel run's ranks (run_ranks); empty otherwise
    std::vector<ShadowRecord> shadow; // the shadow error track (numerics.shadow_every); empty when off
    DeviceInfo device;
    QString label; // legend and table label: the precision, or the name if two runs share it

    // A run still training or cut off: its figures stop at the last committed step.
    bool isIncomplete() const;
    // From the summary, else counted from the step rows.
    qint64 stepCount() const;
    qint64 skippedStepCount() const;
    // Final test accuracy, else that of the last evaluated epoch.
    std::optional<double> finalTestAccuracy() const;
    // A byte-level language model's run (data.dataset text): its losses are also given in bits
    // per character, the unit such models are compared in.
    bool reportsBitsPerCharacter() const;
    // Its task's metric (engine/observe/task_metric.h); accuracy without a config.
    TaskMetric metric() const;
    // Samples per second over the run: the summary, else the mean of the step rows.
    std::optional<double> throughput() const;
    std::optional<qint64> batchSize() const;
    // Whether the run scaled its loss (static or dynamic): its final scale means something.
    bool usesLossScaling() const;
    // The final loss scale, or "none" for a run without loss scaling.
    QString finalLossScaleText() const;
    QString precision() const; // as stored, else from the config
};

// The statistics over the seeds, when the runs are those of one sweep or repeat a configuration
// with other seeds (sweep::groupBySeed): the sweep's section of a report.
struct SeedStatistics {
    QString title; // "Sweep 3 (mlp: fp32 vs mixed-fp16 x 8 seeds)", or "Runs grouped by seed"
    std::vector<sweep::ConfigurationResults> results;
    TaskMetric metric = TaskMetric::Accuracy; // sweep::sweepTaskMetric of the results
    QList<QList<int>> finishedRuns;           // per configuration, the indices in ReportData::runs of its finished runs
    sweep::StatisticsTable table;
    QStringList sentences;
};

struct ReportData {
    QList<RunData> runs;
    std::optional<SeedStatistics> seeds;
    // A precision advice's report (mantissa-cli advise --report): its findings, and `runs` and
    // `seeds` are its verification sweep's (empty when it was not verified).
    std::optional<AdviceSummary> advice;
    int baseline = 0; // index in runs of the run the others are measured against
    MachineInfo machine;
    QDateTime generatedAt; // UTC
    QString databasePath;
    QString mantissaVersion;

    bool isComparison() const { return runs.size() > 1; }
    // Every run is a text run: the epoch plot shows bits per character instead of accuracy
    // (one axis holds one unit).
    bool reportsBitsPerCharacter() const;
    // The runs' metric when they share one, else accuracy; and their loss's name in plots.
    TaskMetric metric() const;
    QString lossName() const; // "loss (cross-entropy)", "loss (mean squared error)"
    const RunData& baselineRun() const { return runs[baseline]; }
    // "mlp-fp32-1" or "mlp-fp32-1 vs mlp-mixed-fp16-2"; an advice's subject and formats
    QString title() const;
};

// The seed statistics of `runs` read from `store`; nullopt when no configuration was run with
// two seeds or more.
std::optional<SeedStatistics> seedStatistics(const RunStore& store, const QList<RunData>& runs);

// Reads runs `runIds` (in that order) from `store`, with their seed statistics. `baselineId`, when given and not among
// them, is added in front. Throws StorageError (NotFound) for an unknown run.
ReportData loadReportData(const RunStore& store, const QList<qint64>& runIds,
                          std::optional<qint64> baselineId = std::nullopt);

} // namespace mantissa::report
