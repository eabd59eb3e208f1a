#pragma once
// Everything one run produced, kept in columns ready for plotting: what the comparison
// view overlays and what the monitor redraws when a finished run is shown again.
#include "engine/config/run_config.h"
#include "engine/train/trainer.h"
#include "ui/record_buffer.h"

#include <QString>
#include <QVector>

#include <map>
#include <optional>

namespace mantissa::ui {

struct OverflowMarker {
    double step = 0;
    double scaleBefore = 0, scaleAfter = 0;
    QString parameter;
    QString layer;     // where the first non-finite value was (EventRecord::location), if known
    QString nonFinite; // what that tensor held, Inf told from NaN ("3 Inf, 1 NaN in 1.linear.weight")
};

// A fork's place in its parent (storage::RunLineage), with the parent's curve up to there: the
// comparison draws a fork from its branch point with the parent's steps before it.
struct ForkLineage {
    qint64 parentRunId = 0; // 0: the parent is no longer in the database
    QString parentName;
    double step = 0;                    // the fork continued the state saved after this step
    QVector<double> leadStep, leadLoss; // the parent's steps up to `step`
};

struct RunRecording {
    QString name;     // "mlp · fp32", or the database's name for a recorded run
    qint64 runId = 0; // in the run database; 0 when not recorded
    RunConfig config;
    std::optional<RunStartInfo> start;
    // Per step.
    QVector<double> step, loss, learningRate, lossScale, samplesPerSecond;
    // A data-parallel run's 16-bit all-reduce (StepRecord::allReduceFlushed): values the division
    // flushed to zero and values the sum overflowed, per step; NaN where a step has none.
    QVector<double> allReduceFlushed, allReduceOverflowed;
    // Per epoch; epochEndStep is the last step of the epoch, to place test loss on step axes.
    QVector<double> epoch, epochEndStep, trainLoss, trainAccuracy, testLoss, testAccuracy;
    // On the samples data.validation_split holds out; NaN in every epoch when none are.
    QVector<double> validationLoss, validationAccuracy;
    QVector<OverflowMarker> overflows;
    std::optional<RunSummary> summary;
    QString failure;
    // Which path each 16-bit type took (Backend::kernelPaths, runs.kernels); empty on a GPU.
    QString kernels;
    // The fingerprint of the data it trained on (DatasetSplits::fingerprint); empty when not known.
    QString dataFingerprint;
    std::optional<ForkLineage> fork; // set for a fork

    void append(const RecordBatch& batch);
    bool finished() const { return summary.has_value(); }
    // Whether any step recorded what its 16-bit all-reduce did.
    bool hasAllReduceCounts() const;

private:
    std::map<int, double> m_lastStepOfEpoch;
};

// "mlp · mixed-fp16"
QString recordingName(const RunConfig& config);

// "native bf16", "emulated fp16": the path the run's compute type took on the CPU, read from
// its kernel record; empty for fp32 runs and where nothing was recorded (GPU runs, old runs).
QString kernelPathLabel(PrecisionMode mode, const QString& kernels);

} // namespace mantissa::ui
