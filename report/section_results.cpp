// The results section: one run's summary, or the comparison table with the differences
// stated in words; then the per-epoch evaluations.
#include "engine/observe/bits_per_character.h"
#include "engine/util/format_number.h"
#include "report/comparison.h"
#include "report/report_format.h"
#include "report/report_plots.h"
#include "report/report_sections.h"

namespace mantissa::report {

namespace {

// The one byte format (engine formatBytes), or the report's "not known".
QString peakMemoryText(std::optional<qint64> bytes)
{
    return bytes && *bytes >= 0 ? QString::fromStdString(formatBytes(std::uint64_t(*bytes))) : notKnown();
}

// More epochs than this are shown every k-th (and the last): the plots carry the detail.
constexpr int kMaxEpochRows = 40;

QList<int> epochRowsToShow(qsizetype count)
{
    QList<int> rows;
    const int every = count <= kMaxEpochRows ? 1 : int((count + kMaxEpochRows - 1) / kMaxEpochRows);
    for (int i = 0; i < count; i += every)
        rows << i;
    if (!rows.isEmpty() && rows.last() != count - 1)
        rows << int(count - 1);
    return rows;
}

QString epochCaption(qsizetype count, qsizetype shown)
{
    return shown < count ? QStringLiteral("%1 of %2 epochs shown, evenly spaced, and the last.").arg(shown).arg(count)
                         : QString();
}

void appendRunSummary(ReportDocument& document, const RunData& run)
{
    const StoredSummary& s = run.info.summary;
    ReportTable table;
    table.header = {QStringLiteral("Result"), QStringLiteral("Value")};
    table.rows = {
        {QStringLiteral("Status"), runStatusName(run.info.status)},
        {QStringLiteral("Precision"), run.precision()},
        {QStringLiteral("Steps"),
         QStringLiteral("%1 (%2 skipped)").arg(formatCount(run.stepCount()), formatCount(run.skippedStepCount()))},
        {QStringLiteral("Epochs evaluated"), QString::number(run.epochs.size())},
        {QStringLiteral("Final training loss"), formatLoss(s.finalTrainLoss)},
        {QStringLiteral("Final test accuracy"), formatPercent(run.finalTestAccuracy(), 2)},
        {QStringLiteral("Best test accuracy"), formatPercent(s.bestTestAccuracy, 2)},
        {QStringLiteral("Time to train"), formatDuration(run.info.wallSeconds)},
        {QStringLiteral("Throughput"), formatThroughput(run.throughput())},
        {QStringLiteral("Final loss scale"), run.finalLossScaleText()},
        {QStringLiteral("Peak memory"), peakMemoryText(run.info.peakMemoryBytes)},
    };
    const bool rmse = run.metric() == TaskMetric::Rmse;
    if (rmse) { // no accuracy: the RMSE takes its rows
        const MetricFigures figures = metricFigures(TaskMetric::Rmse, run.epochs);
        table.rows[5] = {QStringLiteral("Final test RMSE"),
                         QString::fromStdString(formatTaskMetric(TaskMetric::Rmse, figures.final))};
        table.rows[6] = {QStringLiteral("Best test RMSE"),
                         QString::fromStdString(formatTaskMetric(TaskMetric::Rmse, figures.best))};
    }
    if (run.reportsBitsPerCharacter() && !run.epochs.isEmpty())
        table.rows.insert(5, {QStringLiteral("Final test bits per character"),
                              QString::number(bitsPerCharacter(run.epochs.last().testLoss), 'f', 3)});
    const TaskMetric metric = run.metric();
    const bool validation = hasValidation(run.epochs);
    // The metric on the samples data.validation_split held out, after the test figures.
    const QString validationName = QStringLiteral("validation ") + taskMetricName(metric);
    if (validation) {
        const MetricFigures figures = metricFigures(metric, run.epochs, EvaluationSet::Validation);
        const int at = int(table.rows.size()) - 4; // before the time to train
        table.rows.insert(at, {QStringLiteral("Final ") + validationName,
                               QString::fromStdString(formatTaskMetric(metric, figures.final))});
        table.rows.insert(at + 1, {QStringLiteral("Best ") + validationName,
                                   QString::fromStdString(formatTaskMetric(metric, figures.best))});
    }
    if (!run.info.errorMessage.isEmpty())
        table.rows << QStringList{QStringLiteral("Message"), run.info.errorMessage};
    document.table(table);

    ReportTable epochs;
    epochs.header = {QStringLiteral("Epoch"),     QStringLiteral("Train loss"),    QStringLiteral("Train accuracy"),
                     QStringLiteral("Test loss"), QStringLiteral("Test accuracy"), QStringLiteral("Wall time")};
    epochs.numeric = {true, true, true, true, true, true};
    const QList<int> shown = epochRowsToShow(run.epochs.size());
    for (int i : shown) {
        const EpochRecord& e = run.epochs[i];
        epochs.rows << QStringList{QString::number(e.epoch),          formatLoss(e.trainLoss),
                                   formatPercent(e.trainAccuracy, 2), formatLoss(e.testLoss),
                                   formatPercent(e.testAccuracy, 2),  formatDuration(e.wallSeconds)};
        if (run.reportsBitsPerCharacter())
            epochs.rows.last().insert(4, QString::number(bitsPerCharacter(e.testLoss), 'f', 3));
        if (rmse) {
            epochs.rows.last()[4] = QString::fromStdString(
                formatTaskMetric(TaskMetric::Rmse, taskMetricValue(TaskMetric::Rmse, e.testLoss, NAN)));
            epochs.rows.last().removeAt(2);
        }
        if (validation) { // before the wall time
            QStringList& cells = epochs.rows.last();
            cells.insert(cells.size() - 1, formatLoss(e.validationLoss));
            cells.insert(cells.size() - 1, QString::fromStdString(formatTaskMetric(
                                               metric, epochMetricValue(metric, e, EvaluationSet::Validation))));
        }
    }
    if (rmse) {
        epochs.header[4] = QStringLiteral("Test RMSE");
        epochs.header.removeAt(2);
        epochs.numeric.removeAt(2);
    }
    if (run.reportsBitsPerCharacter()) {
        epochs.header.insert(4, QStringLiteral("Test bits/char"));
        epochs.numeric.insert(4, true);
    }
    if (validation) {
        const QString name = metric == TaskMetric::Accuracy ? QStringLiteral("Validation accuracy")
                             : metric == TaskMetric::Rmse   ? QStringLiteral("Validation RMSE")
                                                            : QStringLiteral("Validation bits/char");
        epochs.header.insert(epochs.header.size() - 1, QStringLiteral("Validation loss"));
        epochs.header.insert(epochs.header.size() - 1, name);
        epochs.numeric.insert(epochs.numeric.size() - 1, 2, true);
    }
    if (!epochs.rows.isEmpty())
        document.table(epochs, epochCaption(run.epochs.size(), shown.size()));
}

void appendComparison(ReportDocument& document, const ReportData& data)
{
    const QList<ComparisonRow> rows = comparisonRows(data);
    bool labelsArePrecisions = true;
    for (const ComparisonRow& row : rows)
        labelsArePrecisions = labelsArePrecisions && row.label == row.precision;
    ReportTable table;
    if (labelsArePrecisions) {
        table.header << QStringLiteral("Precision");
        table.numeric << false;
    } else {
        table.header << QStringLiteral("Run") << QStringLiteral("Precision");
        table.numeric << false << false;
    }
    const TaskMetric metric = data.metric();
    const QString metricName = metric == TaskMetric::Accuracy ? QStringLiteral("Test accuracy")
                                                              : QStringLiteral("Test ") + taskMetricName(metric);
    table.header << QStringLiteral("Batch") << metricName << QStringLiteral("Time to train")
                 << QStringLiteral("Speedup") << QStringLiteral("Skipped steps") << QStringLiteral("Final loss scale")
                 << QStringLiteral("Peak memory");
    table.numeric << true << true << true << true << true << true << true;
    for (const ComparisonRow& row : rows) {
        QStringList cells{row.label};
        if (!labelsArePrecisions)
            cells << row.precision;
        cells << (row.batchSize ? formatCount(*row.batchSize) : notKnown()) << formatMetric(row, 2)
              << formatDuration(row.wallSeconds)
              << (row.baseline  ? QStringLiteral("baseline")
                  : row.speedup ? formatRatio(*row.speedup)
                                : notKnown())
              << formatCount(row.skippedSteps) << row.finalLossScaleText << peakMemoryText(row.peakMemoryBytes);
        if (row.status != QLatin1String("finished"))
            cells[0] += QStringLiteral(" (%1)").arg(row.status);
        table.rows << cells;
    }
    table.boldRow = data.baseline;
    document.table(table, metricName + QStringLiteral(" after the last epoch; time to train is wall time, "
                                                      "evaluation included; speedup is the baseline's time over the "
                                                      "run's."));
    document.bullets(comparisonStatements(data));

    qsizetype epochCount = 0;
    for (const RunData& run : data.runs)
        epochCount = std::max(epochCount, run.epochs.size());
    if (epochCount == 0)
        return;
    ReportTable epochs;
    epochs.header << QStringLiteral("Epoch");
    for (const RunData& run : data.runs)
        epochs.header << (metric == TaskMetric::Accuracy
                              ? QStringLiteral("Test acc. %1")
                              : QStringLiteral("Test ") + taskMetricName(metric) + QStringLiteral(" %1"))
                             .arg(run.label);
    for (const RunData& run : data.runs)
        epochs.header << QStringLiteral("Test loss %1").arg(run.label);
    while (epochs.numeric.size() < epochs.header.size())
        epochs.numeric << true;
    const QList<int> shown = epochRowsToShow(epochCount);
    for (int i : shown) {
        QStringList cells{QString::number(i + 1)};
        for (const RunData& run : data.runs)
            cells << (i >= run.epochs.size() ? notKnown()
                      : metric == TaskMetric::Accuracy
                          ? formatPercent(run.epochs[i].testAccuracy, 2)
                          : QString::fromStdString(formatTaskMetric(
                                metric, taskMetricValue(metric, run.epochs[i].testLoss, run.epochs[i].testAccuracy))));
        for (const RunData& run : data.runs)
            cells << (i < run.epochs.size() ? formatLoss(run.epochs[i].testLoss) : notKnown());
        epochs.rows << cells;
    }
    document.heading(QStringLiteral("Per epoch"), 2);
    document.table(epochs, epochCaption(epochCount, shown.size()));
}

} // namespace

void appendResults(ReportDocument& document, const ReportData& data)
{
    document.heading(QStringLiteral("Results"));
    if (data.isComparison())
        appendComparison(document, data);
    else
        appendRunSummary(document, data.runs.first());
}

void appendPlots(ReportDocument& document, const ReportData& data)
{
    document.heading(QStringLiteral("Plots"));
    QList<int> windows;
    for (const RunData& run : data.runs) {
        if (!windows.contains(lossSmoothingWindow(run.steps.size())))
            windows << lossSmoothingWindow(run.steps.size());
    }
    const QString window = windows.size() == 1 ? QStringLiteral("%1 steps").arg(windows.first())
                                               : QStringLiteral("1/60 of each run's steps");
    document.plot(PlotKind::Loss, QStringLiteral("Loss"),
                  QStringLiteral("Training loss of each step (faint), its mean over %1 (line), and the test loss "
                                 "after each epoch (markers).")
                      .arg(window));
    if (data.metric() == TaskMetric::Rmse)
        document.plot(PlotKind::Accuracy, QStringLiteral("RMSE"),
                      QStringLiteral("Training RMSE over each epoch (dashed) and test RMSE after it (solid): the "
                                     "square root of the mean squared error, in the targets' unit; lower is better."));
    else if (data.reportsBitsPerCharacter())
        document.plot(PlotKind::Accuracy, QStringLiteral("Bits per character"),
                      QStringLiteral("Training loss over each epoch (dashed) and test loss after it (solid), in bits "
                                     "per character (loss / ln 2); lower is better."));
    else
        document.plot(PlotKind::Accuracy, QStringLiteral("Accuracy"),
                      QStringLiteral("Training accuracy over each epoch (dashed) and test accuracy after it (solid)."));
    bool scaled = false;
    for (const RunData& run : data.runs) {
        for (double scale : run.steps.lossScale)
            scaled = scaled || scale != 1.0;
        scaled = scaled || run.skippedStepCount() > 0;
    }
    if (scaled)
        document.plot(PlotKind::LossScale, QStringLiteral("Loss scale"),
                      QStringLiteral("The loss scale each step used, on a log2 axis; markers are overflows "
                                     "(steps skipped for non-finite gradients) at the scale that overflowed."));
    else
        document.paragraph(QStringLiteral("No run scaled its loss (the scale stayed 1 and no step was skipped), "
                                          "so there is no loss-scale plot."));
    document.plot(PlotKind::Throughput, QStringLiteral("Throughput"),
                  QStringLiteral("Training samples per second, averaged over spans of steps."));
}

} // namespace mantissa::report
