// The overflow section: per run, how many steps were skipped for non-finite gradients,
// the first overflows (when loss scaling is still finding its level) and the parameters
// that overflowed most (where a per-layer fp32 override may help); for a data-parallel run
// that all-reduced in 16 bits, what its sums flushed to zero and overflowed, step by step.
#include "report/overflow_summary.h"
#include "report/report_format.h"
#include "report/report_sections.h"

#include <cmath>

namespace mantissa::report {

namespace {

QString times(int count)
{
    switch (count) {
    case 1: return QStringLiteral("once");
    case 2: return QStringLiteral("twice");
    default: return QStringLiteral("%1 times").arg(count);
    }
}

void appendRunOverflows(ReportDocument& document, const RunData& run)
{
    const OverflowSummary summary = summarizeOverflows(run);
    const qint64 steps = run.stepCount();
    if (summary.skippedSteps == 0 && summary.overflowEvents == 0) {
        document.paragraph(QStringLiteral("%1: no step was skipped; every one of the %2 steps updated the weights.")
                               .arg(run.label, formatCount(steps)));
        return;
    }
    const double share = steps > 0 ? double(summary.skippedSteps) / double(steps) : 0.0;
    QString text = QStringLiteral("%1: %2 of %3 steps (%4) were skipped because a gradient was not finite.")
                       .arg(run.label, formatCount(summary.skippedSteps), formatCount(steps), formatPercent(share, 2));
    if (summary.scaleGrowths + summary.scaleBackoffs > 0)
        text += QStringLiteral(" The loss scale %1 and %2, staying between %3 and %4; it ended at %5.")
                    .arg(summary.scaleBackoffs ? QStringLiteral("backed off ") + times(summary.scaleBackoffs)
                                               : QStringLiteral("never backed off"),
                         summary.scaleGrowths ? QStringLiteral("grew ") + times(summary.scaleGrowths)
                                              : QStringLiteral("never grew"),
                         formatScale(summary.minScale), formatScale(summary.maxScale),
                         formatScale(run.info.summary.finalLossScale));
    document.paragraph(text);

    ReportTable first;
    first.header = {QStringLiteral("Step"), QStringLiteral("Scale before"), QStringLiteral("Scale after"),
                    QStringLiteral("First non-finite parameter")};
    first.numeric = {true, true, true, false};
    // A data-parallel run: which rank's own gradients overflowed first, or none (the sum did).
    const bool ranks = run.info.worldSize > 1;
    if (ranks) {
        first.header << QStringLiteral("First rank");
        first.numeric << false;
    }
    for (const EventRecord& event : summary.firstOverflows) {
        QStringList row{formatCount(event.step), formatScale(event.scaleBefore), formatScale(event.scaleAfter),
                        event.parameter.empty() ? notKnown() : QString::fromStdString(event.parameter)};
        if (ranks)
            row << (event.firstRank >= 0 ? QString::number(event.firstRank) : QStringLiteral("none: the sum"));
        first.rows << row;
    }
    if (!first.rows.isEmpty()) {
        const QString caption =
            summary.overflowEvents > first.rows.size()
                ? QStringLiteral("The first %1 of %2 overflows.").arg(first.rows.size()).arg(summary.overflowEvents)
                : QStringLiteral("Every overflow.");
        document.table(first, caption);
    }

    ReportTable top;
    top.header = {QStringLiteral("Parameter"), QStringLiteral("Overflows"), QStringLiteral("First step"),
                  QStringLiteral("Last step")};
    top.numeric = {false, true, true, true};
    for (const ParameterOverflows& p : summary.topParameters)
        top.rows << QStringList{p.parameter, QString::number(p.count), formatCount(p.firstStep),
                                formatCount(p.lastStep)};
    if (!top.rows.isEmpty())
        document.table(top,
                       QStringLiteral("The parameters whose gradient was the first to overflow, most often first."));
}

// The steps listed in a run's all-reduce table: as many as its first overflows.
constexpr int kAllReduceSteps = 10;

void appendAllReduceCounts(ReportDocument& document, const RunData& run)
{
    const StepSeries& steps = run.steps;
    qint64 recorded = 0, flushed = 0, overflowed = 0, eventful = 0;
    ReportTable table;
    table.header = {QStringLiteral("Step"), QStringLiteral("Flushed to zero"), QStringLiteral("Overflowed in the sum")};
    table.numeric = {true, true, true};
    for (qsizetype i = 0; i < steps.size(); ++i) {
        if (std::isnan(steps.allReduceFlushed[i]) || std::isnan(steps.allReduceOverflowed[i]))
            continue;
        const auto f = static_cast<qint64>(steps.allReduceFlushed[i]);
        const auto o = static_cast<qint64>(steps.allReduceOverflowed[i]);
        ++recorded;
        flushed += f;
        overflowed += o;
        if (f == 0 && o == 0)
            continue;
        if (++eventful <= kAllReduceSteps)
            table.rows << QStringList{formatCount(static_cast<qint64>(steps.step[i])), formatCount(f), formatCount(o)};
    }
    if (recorded == 0)
        return; // not a run that all-reduced in 16 bits, or recorded before the counts were
    document.paragraph(QStringLiteral("%1: the 16-bit all-reduce flushed %2 values to zero in the division before the "
                                      "sum and overflowed %3 in the sum, over %4 steps; %5 of them lost values.")
                           .arg(run.label, formatCount(flushed), formatCount(overflowed), formatCount(recorded),
                                formatCount(eventful)));
    if (!table.rows.isEmpty())
        document.table(table, eventful > table.rows.size()
                                  ? QStringLiteral("The first %1 of %2 steps whose all-reduce lost values.")
                                        .arg(table.rows.size())
                                        .arg(eventful)
                                  : QStringLiteral("Every step whose all-reduce lost values."));
}

} // namespace

void appendOverflows(ReportDocument& document, const ReportData& data)
{
    document.heading(QStringLiteral("Overflow summary"));
    for (const RunData& run : data.runs) {
        if (data.isComparison())
            document.heading(run.label, 2);
        appendRunOverflows(document, run);
        appendAllReduceCounts(document, run);
    }
}

} // namespace mantissa::report
