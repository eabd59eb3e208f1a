#include "report/overflow_summary.h"

#include <QHash>

#include <algorithm>
#include <cmath>

namespace mantissa::report {

OverflowSummary summarizeOverflows(const RunData& run, int firstCount, int topCount)
{
    OverflowSummary summary;
    summary.skippedSteps = run.skippedStepCount();
    QHash<QString, ParameterOverflows> byParameter;
    for (const EventRecord& event : run.events) {
        if (event.kind == EventKind::Overflow) {
            ++summary.overflowEvents;
            if (summary.firstOverflows.size() < firstCount)
                summary.firstOverflows << event;
            const QString name =
                event.parameter.empty() ? QStringLiteral("(not recorded)") : QString::fromStdString(event.parameter);
            ParameterOverflows& entry = byParameter[name];
            if (entry.count++ == 0) {
                entry.parameter = name;
                entry.firstStep = event.step;
            }
            entry.lastStep = event.step;
        }
        // Every move of the scale is a scale_change event; an overflow event repeats the
        // backoff it caused, so only the former are counted.
        if (event.kind == EventKind::ScaleChange && event.scaleAfter != event.scaleBefore) {
            if (event.scaleAfter > event.scaleBefore)
                ++summary.scaleGrowths;
            else
                ++summary.scaleBackoffs;
        }
    }
    std::sort(summary.firstOverflows.begin(), summary.firstOverflows.end(),
              [](const EventRecord& a, const EventRecord& b) { return a.step < b.step; });
    summary.topParameters = byParameter.values();
    std::sort(summary.topParameters.begin(), summary.topParameters.end(),
              [](const ParameterOverflows& a, const ParameterOverflows& b) {
                  return a.count != b.count ? a.count > b.count : a.firstStep < b.firstStep;
              });
    if (summary.topParameters.size() > topCount)
        summary.topParameters.resize(topCount);
    for (double scale : run.steps.lossScale) {
        if (!std::isfinite(scale))
            continue;
        summary.minScale = std::min(summary.minScale.value_or(scale), scale);
        summary.maxScale = std::max(summary.maxScale.value_or(scale), scale);
    }
    return summary;
}

} // namespace mantissa::report
