#include "ui/epoch_metric.h"

#include <QObject>

#include <algorithm>
#include <cmath>

namespace mantissa::ui {

namespace {

// The metric of each epoch, from its loss and its accuracy.
QVector<double> metricOf(TaskMetric metric, const QVector<double>& losses, const QVector<double>& accuracies)
{
    QVector<double> out;
    const qsizetype n = metric == TaskMetric::Accuracy ? accuracies.size() : losses.size();
    out.reserve(n);
    for (qsizetype i = 0; i < n; ++i) {
        const double value =
            taskMetricValue(metric, i < losses.size() ? losses[i] : NAN, i < accuracies.size() ? accuracies[i] : NAN);
        out << (metric == TaskMetric::Accuracy ? value * 100 : value);
    }
    return out;
}

} // namespace

QString EpochMetric::title() const
{
    switch (metric) {
    case TaskMetric::Accuracy: return QObject::tr("Accuracy");
    case TaskMetric::Rmse: return QObject::tr("RMSE");
    case TaskMetric::BitsPerCharacter: return QObject::tr("Bits per character");
    }
    return {};
}

QString EpochMetric::axisLabel() const
{
    switch (metric) {
    case TaskMetric::Accuracy: return QObject::tr("accuracy (%)");
    case TaskMetric::Rmse: return QObject::tr("RMSE");
    case TaskMetric::BitsPerCharacter: return QObject::tr("bits per character");
    }
    return {};
}

QVector<double> EpochMetric::test(const RunRecording& run) const
{
    return metricOf(metric, run.testLoss, run.testAccuracy);
}

QVector<double> EpochMetric::train(const RunRecording& run) const
{
    return metricOf(metric, run.trainLoss, run.trainAccuracy);
}

QVector<double> EpochMetric::validation(const RunRecording& run) const
{
    return metricOf(metric, run.validationLoss, run.validationAccuracy);
}

bool EpochMetric::hasValidation(const RunRecording& run)
{
    return std::any_of(run.validationLoss.cbegin(), run.validationLoss.cend(),
                       [](double loss) { return std::isfinite(loss); });
}

QString EpochMetric::format(double value) const
{
    if (!std::isfinite(value))
        return QStringLiteral("—");
    switch (metric) {
    case TaskMetric::Accuracy: return QStringLiteral("%1%").arg(value, 0, 'f', 2);
    case TaskMetric::Rmse: return QStringLiteral("RMSE %1").arg(value, 0, 'g', 4);
    case TaskMetric::BitsPerCharacter: return QStringLiteral("%1 bpc").arg(value, 0, 'f', 3);
    }
    return QStringLiteral("—");
}

QString EpochMetric::describeLast(const RunRecording& run) const
{
    const QVector<double> values = test(run);
    if (values.isEmpty())
        return {};
    switch (metric) {
    case TaskMetric::Accuracy: return QObject::tr("test accuracy %1%").arg(values.last(), 0, 'f', 2);
    case TaskMetric::Rmse:
        return QObject::tr("test RMSE %1").arg(QString::fromStdString(formatTaskMetric(metric, values.last())));
    case TaskMetric::BitsPerCharacter: return QObject::tr("test %1 bits per character").arg(values.last(), 0, 'f', 3);
    }
    return {};
}

EpochMetric epochMetricFor(const RunConfig& config) { return {taskMetricOf(config)}; }

EpochMetric epochMetricFor(const QList<std::shared_ptr<const RunRecording>>& runs)
{
    if (runs.isEmpty())
        return {};
    const TaskMetric first = taskMetricOf(runs.front()->config);
    for (const auto& run : runs)
        if (taskMetricOf(run->config) != first)
            return {};
    return {first};
}

} // namespace mantissa::ui
