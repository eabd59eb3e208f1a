#pragma once
// What a run's per-epoch plot shows: test accuracy for a classifier; for a byte-level language
// model the loss in bits per character, the unit such models are compared in (its next-byte
// accuracy says little). The monitor, the comparison and the state line all ask this.
#include "ui/run_recording.h"

#include <QList>
#include <QString>
#include <QVector>

#include <memory>

namespace mantissa::ui {

struct EpochMetric {
    bool bitsPerCharacter = false;

    QString title() const;     // "Accuracy", "Bits per character"
    QString axisLabel() const; // "accuracy (%)", "bits per character"
    // Per epoch, in the axis's unit (percent or bits per character).
    QVector<double> test(const RunRecording& run) const;
    QVector<double> train(const RunRecording& run) const;
    // The last epoch's test value in words: "test accuracy 84.10%", "test 2.314 bits per character";
    // empty before the first epoch ends.
    QString describeLast(const RunRecording& run) const;
};

EpochMetric epochMetricFor(const RunConfig& config);
// Bits per character only when every run is a text run: one axis cannot hold both units.
EpochMetric epochMetricFor(const QList<std::shared_ptr<const RunRecording>>& runs);

} // namespace mantissa::ui
