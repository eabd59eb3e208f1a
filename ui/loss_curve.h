#pragma once
// A run's train-loss curve as a chart draws it, smoothed. A fork's starts at its branch point
// and is smoothed on from its parent's curve before it (RunRecording::fork), so that it leaves
// the parent's curve where the fork did rather than jumping to an unsmoothed start.
#include "ui/run_recording.h"

#include <QVector>

namespace mantissa::ui {

struct LossCurve {
    QVector<double> step, loss; // the run's own; a fork's begins with the branch point
    // A fork's parent up to the branch point (empty for other runs, or when the parent is gone).
    QVector<double> leadStep, leadLoss;
    bool isFork() const { return !leadStep.isEmpty(); }
};

LossCurve smoothedLossCurve(const RunRecording& run, double weight);

} // namespace mantissa::ui
