#pragma once
// What overflowed in a run: how many steps were skipped for non-finite gradients, the
// first of those overflows (step, scale, first non-finite parameter), the parameters that
// overflowed most, and how the dynamic scaler moved.
#include "report/report_data.h"

namespace mantissa::report {

struct ParameterOverflows {
    QString parameter;
    int count = 0;
    qint64 firstStep = 0, lastStep = 0;
};

struct OverflowSummary {
    qint64 skippedSteps = 0;
    QList<EventRecord> firstOverflows; // in step order, at most `firstCount`
    qsizetype overflowEvents = 0;
    QList<ParameterOverflows> topParameters;  // most overflows first, at most `topCount`
    int scaleGrowths = 0, scaleBackoffs = 0;  // scale_change events up and down
    std::optional<double> minScale, maxScale; // over the steps
};

OverflowSummary summarizeOverflows(const RunData& run, int firstCount = 10, int topCount = 8);

} // namespace mantissa::report
