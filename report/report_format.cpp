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
    if (!seconds || !std::isfinite(*seconds) || *seconds < 0)
        return notKnown();
    const double s = *seconds;
    if (s < 60)
        return QString::number(s, 'f', s < 10 ? 2 : 1) + QStringLiteral(" s");
    const qint64 whole = std::llround(s);
    if (whole < 3600)
        return QStringLiteral("%1 min %2 s").arg(whole / 60).arg(whole % 60, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1 h %2 min").arg(whole / 3600).arg((whole % 3600) / 60, 2, 10, QLatin1Char('0'));
}

QString formatScale(std::optional<double> scale)
{
    if (!scale)
        return notKnown();
    if (!std::isfinite(*scale) || *scale <= 0)
        return formatValue(scale);
    const QString plain = QString::number(*scale, 'g', 8);
    if (const std::optional<int> exponent = exactPowerOfTwo(*scale))
        return QStringLiteral("%1 (2^%2)").arg(plain).arg(*exponent);
    return plain;
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
