#pragma once
// The comparison of runs against a baseline, as the classic mixed-precision results table
// (precision, batch size, accuracy, time to train, speedup, skipped steps, final loss
// scale, peak memory) and as sentences that state the differences plainly.
#include "report/report_data.h"

#include <QStringList>

#include <optional>

namespace mantissa::report {

struct ComparisonRow {
    QString run, label, precision, status;
    bool baseline = false;
    std::optional<qint64> batchSize;
    TaskMetric metric = TaskMetric::Accuracy;
    std::optional<double> testAccuracy; // final: the task's metric (accuracy, RMSE, bits per character)
    std::optional<double> wallSeconds;  // time to train
    std::optional<double> speedup;      // baseline wall time / this run's
    qint64 skippedSteps = 0;
    std::optional<double> finalLossScale;
    QString finalLossScaleText; // "none" without loss scaling
    std::optional<qint64> peakMemoryBytes;
};

QList<ComparisonRow> comparisonRows(const ReportData& data);

// The row's final metric: "91.2%" (`decimals` of a percentage), "0.1234"; "-" when not known.
QString formatMetric(const ComparisonRow& row, int decimals = 1);

// One sentence per run other than the baseline, e.g. "mixed-fp16 reached 91.2% vs 91.4%
// in fp32, 1.9x faster, 37 skipped steps, 0.6x the peak memory."
QStringList comparisonStatements(const ReportData& data);

} // namespace mantissa::report
