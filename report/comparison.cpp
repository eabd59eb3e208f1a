#include "report/comparison.h"

#include "report/report_format.h"

#include <cmath>

namespace mantissa::report {

namespace {

// Within 3% reads as "as fast": step times on a shared machine vary by about that much.
constexpr double kSameSpeedTolerance = 0.03;

QString speedPhrase(double speedup)
{
    if (std::abs(speedup - 1.0) <= kSameSpeedTolerance)
        return QStringLiteral("about as fast");
    if (speedup > 1.0)
        return formatRatio(speedup) + QStringLiteral(" faster");
    return formatRatio(1.0 / speedup) + QStringLiteral(" slower");
}

// The subject of a sentence: "mixed-fp16", or "mixed-fp16 (interrupted)" for a run that
// did not finish, so that its figures are not read as final.
QString subject(const ComparisonRow& row)
{
    if (row.status == QLatin1String("finished"))
        return row.label;
    return QStringLiteral("%1 (%2)").arg(row.label, row.status);
}

QString accuracyPhrase(const ComparisonRow& row, const ComparisonRow& base)
{
    const QString name = QString::fromLatin1(taskMetricName(row.metric));
    if (!row.testAccuracy)
        return subject(row) + QStringLiteral(" has no test %1 (no epoch was evaluated)").arg(name);
    const QString prefix = row.metric == TaskMetric::Accuracy ? QString() : name + QLatin1Char(' ');
    QString text = subject(row) + QStringLiteral(" reached ") + prefix + formatMetric(row);
    if (base.testAccuracy)
        text += QStringLiteral(" vs %1 in %2").arg(formatMetric(base), base.label);
    return text;
}

QString skippedPhrase(qint64 skipped)
{
    if (skipped == 0)
        return QStringLiteral("no skipped steps");
    return skipped == 1 ? QStringLiteral("1 skipped step") : formatCount(skipped) + QStringLiteral(" skipped steps");
}

} // namespace

QString formatMetric(const ComparisonRow& row, int decimals)
{
    if (row.metric == TaskMetric::Accuracy)
        return formatPercent(row.testAccuracy, decimals);
    return QString::fromStdString(formatTaskMetric(row.metric, row.testAccuracy.value_or(NAN)));
}

QList<ComparisonRow> comparisonRows(const ReportData& data)
{
    QList<ComparisonRow> rows;
    const RunData& base = data.baselineRun();
    for (int i = 0; i < data.runs.size(); ++i) {
        const RunData& run = data.runs[i];
        ComparisonRow row;
        row.run = run.info.name;
        row.label = run.label;
        row.precision = run.precision();
        row.status = runStatusName(run.info.status);
        row.baseline = i == data.baseline;
        row.batchSize = run.batchSize();
        row.metric = data.metric();
        if (row.metric == TaskMetric::Accuracy) {
            row.testAccuracy = run.finalTestAccuracy();
        } else if (const double value = metricFigures(row.metric, run.epochs).final; std::isfinite(value)) {
            row.testAccuracy = value;
        }
        row.wallSeconds = run.info.wallSeconds;
        if (run.info.wallSeconds && base.info.wallSeconds && *run.info.wallSeconds > 0)
            row.speedup = *base.info.wallSeconds / *run.info.wallSeconds;
        row.skippedSteps = run.skippedStepCount();
        row.finalLossScale = run.info.summary.finalLossScale;
        row.finalLossScaleText = run.finalLossScaleText();
        row.peakMemoryBytes = run.info.peakMemoryBytes;
        rows << row;
    }
    return rows;
}

QStringList comparisonStatements(const ReportData& data)
{
    const QList<ComparisonRow> rows = comparisonRows(data);
    const ComparisonRow& base = rows[data.baseline];
    QStringList statements;
    for (const ComparisonRow& row : rows) {
        if (row.baseline)
            continue;
        QStringList parts{accuracyPhrase(row, base)};
        if (row.speedup)
            parts << speedPhrase(*row.speedup);
        parts << skippedPhrase(row.skippedSteps);
        if (row.peakMemoryBytes && base.peakMemoryBytes && *base.peakMemoryBytes > 0)
            parts << formatRatio(double(*row.peakMemoryBytes) / double(*base.peakMemoryBytes)) +
                         QStringLiteral(" the peak memory");
        statements << parts.join(QStringLiteral(", ")) + QLatin1Char('.');
    }
    return statements;
}

} // namespace mantissa::report
