#include "ui/epoch_metric.h"

#include "engine/observe/bits_per_character.h"

#include <QObject>

namespace mantissa::ui {

namespace {

QVector<double> scaled(const QVector<double>& values, double (*convert)(double))
{
    QVector<double> out;
    out.reserve(values.size());
    for (double v : values)
        out << convert(v);
    return out;
}

double toPercent(double fraction) { return fraction * 100; }

} // namespace

QString EpochMetric::title() const
{
    return bitsPerCharacter ? QObject::tr("Bits per character") : QObject::tr("Accuracy");
}

QString EpochMetric::axisLabel() const
{
    return bitsPerCharacter ? QObject::tr("bits per character") : QObject::tr("accuracy (%)");
}

QVector<double> EpochMetric::test(const RunRecording& run) const
{
    return bitsPerCharacter ? scaled(run.testLoss, &mantissa::bitsPerCharacter) : scaled(run.testAccuracy, &toPercent);
}

QVector<double> EpochMetric::train(const RunRecording& run) const
{
    return bitsPerCharacter ? scaled(run.trainLoss, &mantissa::bitsPerCharacter)
                            : scaled(run.trainAccuracy, &toPercent);
}

QString EpochMetric::describeLast(const RunRecording& run) const
{
    if (bitsPerCharacter)
        return run.testLoss.isEmpty() ? QString()
                                      : QObject::tr("test %1 bits per character")
                                            .arg(mantissa::bitsPerCharacter(run.testLoss.last()), 0, 'f', 3);
    return run.testAccuracy.isEmpty() ? QString()
                                      : QObject::tr("test accuracy %1%").arg(run.testAccuracy.last() * 100, 0, 'f', 2);
}

EpochMetric epochMetricFor(const RunConfig& config) { return {reportsBitsPerCharacter(config)}; }

EpochMetric epochMetricFor(const QList<std::shared_ptr<const RunRecording>>& runs)
{
    if (runs.isEmpty())
        return {};
    for (const auto& run : runs)
        if (!reportsBitsPerCharacter(run->config))
            return {};
    return {true};
}

} // namespace mantissa::ui
