#include "report/report_format.h"

#include "engine/util/format_number.h"

#include <cmath>

namespace mantissa::report {

QString notKnown() { return QStringLiteral("–"); }

QString formatPercent(std::optional<double> fraction, int decimals)
{
    if (!fraction || !std::isfinite(*fraction))
        return notKnown();
    return QString::number(*fraction * 100.0, 'f', decimals) + QLatin1Char('%');
}

QString formatDuration(std::optional<double> seconds)
{
    const std::string text = seconds ? mantissa::formatDuration(*seconds) : std::string();
    return text.empty() ? notKnown() : QString::fromStdString(text);
}

QString formatScale(std::optional<double> scale)
{
    if (!scale)
        return notKnown();
    const std::string text = mantissa::formatScale(*scale);
    return text.empty() ? formatValue(scale) : QString::fromStdString(text);
}

QString formatRatio(double ratio)
{
    const std::string text = mantissa::formatRatio(ratio);
    return text.empty() ? notKnown() : QString::fromStdString(text);
}

QString formatValue(std::optional<double> value, int significant)
{
    if (!value)
        return notKnown();
    if (std::isnan(*value))
        return QStringLiteral("nan");
    if (std::isinf(*value))
        return *value > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
    return QString::number(*value, 'g', significant);
}

QString formatLoss(std::optional<double> value)
{
    if (!value || !std::isfinite(*value) || std::abs(*value) >= 10)
        return formatValue(value, 5);
    return QString::number(*value, 'f', 4);
}

QString formatCount(std::optional<qint64> count)
{
    if (!count)
        return notKnown();
    QString digits = QString::number(std::abs(*count));
    for (qsizetype i = digits.size() - 3; i > 0; i -= 3)
        digits.insert(i, QLatin1Char(','));
    return *count < 0 ? QLatin1Char('-') + digits : digits;
}

QString formatThroughput(std::optional<double> samplesPerSecond)
{
    if (!samplesPerSecond || !std::isfinite(*samplesPerSecond))
        return notKnown();
    return formatCount(std::llround(*samplesPerSecond)) + QStringLiteral(" samples/s");
}

} // namespace mantissa::report
