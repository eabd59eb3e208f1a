#pragma once
// What a run's per-epoch plot shows: its task's metric (engine/observe/task_metric.h): test
// accuracy for a classifier, RMSE for regression, and for a byte-level language model the loss
// in bits per character, the unit such models are compared in (its next-byte accuracy says
// little). The monitor, the comparison and the state line all ask this.
#include "engine/observe/task_metric.h"
#include "ui/run_recording.h"

#include <QList>
#include <QString>
#include <QVector>

#include <memory>

namespace mantissa::ui {

struct EpochMetric {
    TaskMetric metric = TaskMetric::Accuracy;

    // Where a plot's legend goes: away from where the curves end up.
    bool lowerIsBetter() const { return mantissa::lowerIsBetter(metric); }
    QString title() const;     // "Accuracy", "RMSE", "Bits per character"
    QString axisLabel() const; // "accuracy (%)", "RMSE", "bits per character"
    // Per epoch, in the axis's unit (percent, the targets' unit or bits per character).
    QVector<double> test(const RunRecording& run) const;
    QVector<double> train(const RunRecording& run) const;
    // On the validation samples (data.validation_split); NaN in every epoch when none are held out.
    QVector<double> validation(const RunRecording& run) const;
    static bool hasValidation(const RunRecording& run);
    // A value in the axis's unit as a table shows it: "84.10%", "RMSE 0.1234", "2.314 bpc"; "—"
    // when not known.
    QString format(double value) const;
    // The last epoch's test value in words: "test accuracy 84.10%", "test RMSE 0.1234",
    // "test 2.314 bits per character"; empty before the first epoch ends.
    QString describeLast(const RunRecording& run) const;
};

EpochMetric epochMetricFor(const RunConfig& config);
// One metric when every run has it; else accuracy (one axis cannot hold two units).
EpochMetric epochMetricFor(const QList<std::shared_ptr<const RunRecording>>& runs);

} // namespace mantissa::ui
