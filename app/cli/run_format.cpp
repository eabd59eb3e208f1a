#include "cli/run_format.h"

#include "engine/util/format_number.h"

#include <cmath>

namespace mantissa::cli {

namespace {
const QString kUnknown = QStringLiteral("-");
}

QString formatSeconds(std::optional<double> seconds)
{
    const std::string text = seconds ? formatDuration(*seconds) : std::string();
    return text.empty() ? kUnknown : QString::fromStdString(text);
}

QString formatMemory(std::optional<qint64> bytes)
{
    if (!bytes || *bytes < 0)
        return kUnknown;
    return QString::fromStdString(formatBytes(std::uint64_t(*bytes)));
}

QString formatPercent(std::optional<double> fraction)
{
    if (!fraction || std::isnan(*fraction))
        return kUnknown;
    return QStringLiteral("%1%").arg(*fraction * 100.0, 0, 'f', 2);
}

QString formatValue(std::optional<double> value, int significantDigits)
{
    if (!value)
        return kUnknown;
    if (std::isnan(*value))
        return QStringLiteral("nan");
    if (std::isinf(*value))
        return *value > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
    return QString::number(*value, 'g', significantDigits);
}

QString formatCount(std::optional<qint64> count) { return count ? QString::number(*count) : kUnknown; }

QString formatRate(std::optional<double> samplesPerSecond)
{
    if (!samplesPerSecond || !std::isfinite(*samplesPerSecond))
        return kUnknown;
    return QStringLiteral("%1/s").arg(*samplesPerSecond, 0, 'f', 0);
}

QString formatLocalTime(const QDateTime& utc)
{
    return utc.isValid() ? utc.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm:ss")) : kUnknown;
}

QString formatSpeedup(double ratio)
{
    const std::string text = formatRatio(ratio);
    return text.empty() ? kUnknown : QString::fromStdString(text);
}

QString formatLineage(const std::optional<storage::RunLineage>& parent)
{
    if (!parent)
        return kUnknown;
    return parent->runId ? QStringLiteral("#%1 at step %2").arg(*parent->runId).arg(parent->step)
                         : QStringLiteral("(deleted) at step %1").arg(parent->step);
}

} // namespace mantissa::cli
