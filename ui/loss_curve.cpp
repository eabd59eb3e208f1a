#include "ui/loss_curve.h"

#include "ui/smoothing.h"

namespace mantissa::ui {

LossCurve smoothedLossCurve(const RunRecording& run, double weight)
{
    LossCurve curve;
    if (!run.fork || run.fork->leadStep.isEmpty()) {
        curve.step = run.step;
        curve.loss = smoothed(run.loss, weight);
        return curve;
    }
    const ForkLineage& fork = *run.fork;
    const QVector<double> all = smoothed(fork.leadLoss + run.loss, weight);
    const qsizetype lead = fork.leadStep.size();
    curve.leadStep = fork.leadStep;
    curve.leadLoss = all.mid(0, lead);
    curve.step = QVector<double>{fork.leadStep.last()} + run.step;
    curve.loss = all.mid(lead - 1);
    return curve;
}

} // namespace mantissa::ui
