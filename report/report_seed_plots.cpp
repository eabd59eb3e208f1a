// The mean curves with bands of a report's seed statistics, drawn like the GUI's Comparison
// tab draws them (report/band_plot): one colour per configuration, the band min to max.
#include "report/band_plot.h"
#include "report/plot_palette.h"
#include "report/report_plots.h"
#include "report/series_thinning.h"

#include <qcustomplot.h>

namespace mantissa::report {

namespace {

// Every k-th point, so that a long run's band draws as fast as a short one's.
sweep::BandCurve decimated(const sweep::BandCurve& band, int maxPoints)
{
    const qsizetype stride = std::max<qsizetype>(1, band.key.size() / maxPoints);
    if (stride == 1)
        return band;
    sweep::BandCurve out;
    for (qsizetype i = 0; i < band.key.size(); i += stride) {
        out.key << band.key[i];
        out.mean << band.mean[i];
        out.low << band.low[i];
        out.high << band.high[i];
        out.n << band.n[i];
    }
    return out;
}

sweep::BandCurve configurationBand(PlotKind kind, const ReportData& data, const QList<int>& runs)
{
    QList<sweep::Curve> curves;
    for (int index : runs) {
        const RunData& run = data.runs[index];
        sweep::Curve curve;
        if (kind == PlotKind::MeanLoss) {
            curve.key = QVector<double>(run.steps.step.begin(), run.steps.step.end());
            const QList<double> mean = movingMean(run.steps.loss, lossSmoothingWindow(run.steps.size()));
            curve.value = QVector<double>(mean.begin(), mean.end());
        } else {
            for (const EpochRecord& epoch : run.epochs) {
                curve.key << epoch.epoch;
                curve.value << epochMetricValue(data.seeds->metric, epoch, EvaluationSet::Test);
            }
        }
        curves << curve;
    }
    return decimated(sweep::bandCurve(curves, sweep::BandKind::MinMax), kMaxPlotPoints);
}

} // namespace

void fillMeanPlot(QCustomPlot& plot, PlotKind kind, const ReportData& data)
{
    if (!data.seeds)
        return;
    const SeedStatistics& seeds = *data.seeds;
    const double scale = kind == PlotKind::MeanAccuracy && seeds.metric == TaskMetric::Accuracy ? 100 : 1;
    for (int c = 0; c < int(seeds.results.size()); ++c) {
        const QList<int>& runs = seeds.finishedRuns[c];
        if (runs.isEmpty())
            continue;
        const QString name = QStringLiteral("%1 (n = %2)")
                                 .arg(QString::fromStdString(seeds.results[std::size_t(c)].configuration.label))
                                 .arg(runs.size());
        const BandGraphs graphs =
            addBandGraphs(plot, configurationBand(kind, data, runs), name, runColor(c), scale, c > 0);
        if (kind == PlotKind::MeanAccuracy)
            graphs.mean->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, runColor(c), 5));
    }
    plot.rescaleAxes();
    if (kind == PlotKind::MeanAccuracy) {
        auto epochs = QSharedPointer<QCPAxisTickerFixed>::create();
        epochs->setTickStep(1); // epochs are whole
        epochs->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
        plot.xAxis->setTicker(epochs);
        plot.xAxis->setRange(plot.xAxis->range().lower - 0.5, plot.xAxis->range().upper + 0.5);
        plot.yAxis->scaleRange(1.15, plot.yAxis->range().center());
    } else {
        plot.yAxis->setRangeLower(0);
        plot.yAxis->setRangeUpper(plot.yAxis->range().upper * 1.08);
    }
}

} // namespace mantissa::report
