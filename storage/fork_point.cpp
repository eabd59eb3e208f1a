#include "storage/fork_point.h"

#include "storage/storage_error.h"

#include <QFileInfo>

#include <algorithm>

#include <cmath>

namespace mantissa::storage {

namespace {

// "20, 40, 60 and 80"; a long list keeps its first and last few.
QString stepList(const QList<qint64>& steps)
{
    constexpr qsizetype kEnds = 6, kAll = 16;
    QStringList shown;
    for (qsizetype i = 0; i < steps.size(); ++i) {
        if (steps.size() > kAll && i == kEnds) {
            shown << QStringLiteral("…");
            i = steps.size() - kEnds;
        }
        shown << QString::number(steps[i]);
    }
    if (shown.size() == 1)
        return shown.first();
    const QString last = shown.takeLast();
    return shown.join(QStringLiteral(", ")) + QStringLiteral(" and ") + last;
}

// "; the nearest are 675 and 750": the saved states either side of `step`, when it lies between two.
QString nearestText(const QList<qint64>& steps, qint64 step)
{
    const auto after = std::upper_bound(steps.begin(), steps.end(), step);
    if (after == steps.begin() || after == steps.end())
        return {};
    return QStringLiteral("; the nearest are %1 and %2").arg(*(after - 1)).arg(*after);
}

} // namespace

QList<qint64> savedStateSteps(const RunStore& store, qint64 runId)
{
    QList<qint64> steps;
    for (const CheckpointInfo& checkpoint : store.checkpoints(runId))
        if (!steps.contains(checkpoint.step))
            steps << checkpoint.step;
    std::sort(steps.begin(), steps.end());
    return steps;
}

CheckpointInfo forkPoint(const RunStore& store, const RunInfo& parent, qint64 step)
{
    const QList<CheckpointInfo> checkpoints = store.checkpoints(parent.id);
    for (const CheckpointInfo& checkpoint : checkpoints) {
        if (checkpoint.step != step)
            continue;
        if (!QFileInfo::exists(checkpoint.absolutePath))
            throw StorageError(
                StorageError::Kind::NotFound, checkpoint.absolutePath,
                QStringLiteral("the saved state of run %1 at step %2 is missing from disk").arg(parent.name).arg(step));
        return checkpoint;
    }
    const QList<qint64> steps = savedStateSteps(store, parent.id);
    const QString has =
        steps.isEmpty()
            ? QStringLiteral("it has none (a run saves its state at its end, every "
                             "training.checkpoint_every_epochs epochs and every training.save_state_every steps)")
            : QStringLiteral("it has one at step%1 %2").arg(steps.size() == 1 ? "" : "s", stepList(steps)) +
                  nearestText(steps, step);
    throw StorageError(StorageError::Kind::NotFound, store.path(),
                       QStringLiteral("run %1 (#%2) has no saved training state at step %3; %4")
                           .arg(parent.name)
                           .arg(parent.id)
                           .arg(step)
                           .arg(has));
}

std::optional<qint64> nearestSavedState(const RunStore& store, qint64 runId, double step)
{
    std::optional<qint64> best;
    for (qint64 s : savedStateSteps(store, runId))
        if (!best || std::abs(double(s) - step) <= std::abs(double(*best) - step))
            best = s;
    return best;
}

} // namespace mantissa::storage
