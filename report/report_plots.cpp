#include "report/report_plots.h"

#include "report/plot_palette.h"
#include "report/series_thinning.h"
#include "report/shadow_heatmap.h"

#include <QBuffer>
#include <QFontDatabase>
#include <QPixmap>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace mantissa::report {

// Overflow markers beyond this many per run are sampled evenly: a pure-fp16 run can skip
// every step, and ten thousand markers draw as one smear anyway.
constexpr int kMaxMarkers = 1000;

QFont plotFont(double pointSize, bool bold)
{
    QFont font = QFontDatabase::systemFont(QFontDatabase::GeneralFont);
    font.setPointSizeF(pointSize);
    font.setBold(bold);
    font.setStyleStrategy(QFont::PreferNoShaping); // no ligatures: PDF text stays searchable
    return font;
}

namespace {

// Loss scales are powers of two: label them 2⁴, 2¹⁶, 2⁻³ rather than 16, 65536, 0.125.
class Log2Ticker : public QCPAxisTickerLog {
public:
    Log2Ticker()
    {
        setLogBase(2);
        setSubTickCount(0); // linear sub-ticks between powers of two only clutter the axis
    }

protected:
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar, int precision) override
    {
        const double exponent = std::log2(tick);
        if (std::abs(exponent - std::round(exponent)) > 1e-9)
            return QCPAxisTickerLog::getTickLabel(tick, locale, formatChar, precision);
        static const QString superscripts = QStringLiteral("⁰¹²³⁴⁵⁶⁷⁸⁹");
        QString text = QStringLiteral("2");
        const QString digits = QString::number(qint64(std::round(exponent)));
        for (QChar c : digits)
            text += c == QLatin1Char('-') ? QStringLiteral("⁻") : QString(superscripts[c.digitValue()]);
        return text;
    }
};

void styleAxis(QCPAxis* axis, const QString& label)
{
    axis->setLabel(label);
    axis->setLabelFont(plotFont(8.5));
    axis->setTickLabelFont(plotFont(7.5));
    axis->grid()->setPen(QPen(QColor(215, 215, 215), 0, Qt::SolidLine));
    axis->grid()->setZeroLinePen(Qt::NoPen);
    axis->setBasePen(QPen(QColor(90, 90, 90), 0));
    axis->setTickPen(QPen(QColor(90, 90, 90), 0));
    axis->setSubTickPen(QPen(QColor(90, 90, 90), 0));
}

} // namespace

// The title on top and the legend under the axes, in rows of four, so that no curve is
// ever hidden behind the legend.
void frame(QCustomPlot& plot, const QString& title, const QString& xLabel, const QString& yLabel)
{
    plot.setAntialiasedElements(QCP::aeAll);
    plot.setNotAntialiasedElements(QCP::aeGrid | QCP::aeAxes);
    styleAxis(plot.xAxis, xLabel);
    styleAxis(plot.yAxis, yLabel);
    plot.plotLayout()->insertRow(0);
    auto* heading = new QCPTextElement(&plot, title, plotFont(10, true));
    heading->setMargins(QMargins(0, 2, 0, 0));
    plot.plotLayout()->addElement(0, 0, heading);
    plot.plotLayout()->setRowSpacing(0);
    // Only the left and bottom margins must fit tick labels; fixed ones elsewhere keep the
    // axes close to the title and the legend.
    plot.axisRect()->setAutoMargins(QCP::msLeft | QCP::msBottom);
    plot.axisRect()->setMargins(QMargins(0, 6, 16, 0));
    plot.legend->setVisible(true);
    plot.legend->setFont(plotFont(7.5));
    plot.legend->setBorderPen(Qt::NoPen);
    plot.legend->setIconSize(22, 10);
    plot.axisRect()->insetLayout()->take(plot.legend);
    // Centred between two empty cells that take the spare width.
    auto* legendRow = new QCPLayoutGrid;
    plot.plotLayout()->addElement(2, 0, legendRow);
    legendRow->addElement(0, 0, new QCPLayoutElement(&plot));
    legendRow->addElement(0, 1, plot.legend);
    legendRow->addElement(0, 2, new QCPLayoutElement(&plot));
    legendRow->setColumnStretchFactor(1, 0.001);
    legendRow->setColumnSpacing(0);
    plot.legend->setFillOrder(QCPLegend::foColumnsFirst);
    plot.legend->setWrap(4);
    plot.legend->setMargins(QMargins(4, 0, 4, 2));
    plot.legend->setColumnSpacing(18);
    plot.plotLayout()->setMargins(QMargins(4, 2, 4, 6)); // nothing touches the image's edges
    plot.plotLayout()->setRowStretchFactor(0, 0.001);
    plot.plotLayout()->setRowStretchFactor(2, 0.001);
}

namespace {

QCPGraph* addGraph(QCustomPlot& plot, const QString& name, const QPen& pen, const XySeries& series)
{
    QCPGraph* graph = plot.addGraph();
    graph->setName(name);
    graph->setPen(pen);
    graph->setData(QVector<double>(series.keys), QVector<double>(series.values), true);
    return graph;
}

QPen runPen(int run, double width, Qt::PenStyle style = Qt::SolidLine, int alpha = 255)
{
    QColor color = runColor(run);
    color.setAlpha(alpha);
    QPen pen(color, width, style);
    pen.setCapStyle(Qt::FlatCap);
    return pen;
}

// The step at which each epoch ended: where its evaluation belongs on a step axis.
XySeries epochValuesAtSteps(const RunData& run, float EpochRecord::*field, double factor = 1.0)
{
    XySeries series;
    for (const EpochRecord& epoch : run.epochs) {
        double lastStep = -1;
        for (qsizetype i = run.steps.size() - 1; i >= 0; --i) {
            if (run.steps.epoch[i] == epoch.epoch) {
                lastStep = run.steps.step[i];
                break;
            }
            if (run.steps.epoch[i] < epoch.epoch)
                break;
        }
        if (lastStep >= 0) {
            series.keys << lastStep;
            series.values << double(epoch.*field) * factor;
        }
    }
    return series;
}

// How an epoch's stored value becomes the plotted one.
using EpochValue = double (*)(double);
double toPercent(double fraction) { return fraction * 100; }
double toBits(double nats) { return bitsPerCharacter(nats); }
double toRoot(double meanSquare) { return std::sqrt(meanSquare); }

XySeries epochValues(const RunData& run, float EpochRecord::*field, EpochValue convert)
{
    XySeries series;
    for (const EpochRecord& epoch : run.epochs) {
        series.keys << epoch.epoch;
        series.values << convert(double(epoch.*field));
    }
    return series;
}

// Steps from the first to the last of any run, with a little room at both ends so that
// markers on the first and last step are not cut in half by the axes.
void setStepRange(QCPAxis* axis, const ReportData& data)
{
    double last = 1;
    for (const RunData& run : data.runs) {
        if (!run.steps.isEmpty())
            last = std::max(last, run.steps.step.last());
    }
    axis->setRange(-0.015 * last, 1.02 * last);
}

// The upper end of a loss axis: high enough for the test losses and 99% of the training
// steps, so that one early spike does not flatten every curve against the floor.
double lossCeiling(const QList<double>& train, const QList<double>& test)
{
    QList<double> values;
    for (double v : train) {
        if (std::isfinite(v))
            values << v;
    }
    double ceiling = 0;
    if (!values.isEmpty()) {
        const qsizetype at = std::min(values.size() - 1, qsizetype(double(values.size()) * 0.99));
        std::nth_element(values.begin(), values.begin() + at, values.end());
        ceiling = values[at];
    }
    for (double v : test) {
        if (std::isfinite(v))
            ceiling = std::max(ceiling, v);
    }
    return ceiling > 0 ? ceiling * 1.08 : 1.0;
}

void fillLoss(QCustomPlot& plot, const ReportData& data)
{
    QList<double> train, test;
    for (int i = 0; i < data.runs.size(); ++i) {
        const RunData& run = data.runs[i];
        const XySeries steps = thinMinMax(run.steps.step, run.steps.loss, kMaxPlotPoints);
        QCPGraph* raw = addGraph(plot, QString(), runPen(i, 0.6, Qt::SolidLine, 70), steps);
        raw->removeFromLegend();
        const QList<double> mean = movingMean(run.steps.loss, lossSmoothingWindow(run.steps.size()));
        addGraph(plot, run.label + QStringLiteral(" train (mean)"), runPen(i, 1.4),
                 thinMinMax(run.steps.step, mean, kMaxPlotPoints));
        QCPGraph* epochs = addGraph(plot, run.label + QStringLiteral(" test"), runPen(i, 1.6),
                                    epochValuesAtSteps(run, &EpochRecord::testLoss));
        epochs->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, runColor(i), 5));
        train << steps.values;
        for (const EpochRecord& e : run.epochs)
            test << e.testLoss;
    }
    setStepRange(plot.xAxis, data);
    plot.yAxis->setRange(0, lossCeiling(train, test));
}

// The finite values the epoch curves hold, and the last epoch.
struct EpochExtent {
    double lo = std::numeric_limits<double>::infinity();
    double hi = -std::numeric_limits<double>::infinity();
    double lastEpoch = 1;
};

// Each run's test value after every epoch (solid, discs), train value over it (dashed,
// circles) and, for a run with a validation split, its validation value (dotted, triangles):
// `convert(field)`, on an epoch axis with a tick per epoch.
EpochExtent addEpochCurves(QCustomPlot& plot, const ReportData& data, float EpochRecord::*testField,
                           float EpochRecord::*trainField, float EpochRecord::*validationField, EpochValue convert)
{
    EpochExtent extent;
    for (int i = 0; i < data.runs.size(); ++i) {
        const RunData& run = data.runs[i];
        QCPGraph* test =
            addGraph(plot, run.label + QStringLiteral(" test"), runPen(i, 1.6), epochValues(run, testField, convert));
        test->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, runColor(i), 5));
        QCPGraph* train = addGraph(plot, run.label + QStringLiteral(" train"), runPen(i, 1.2, Qt::DashLine),
                                   epochValues(run, trainField, convert));
        train->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(runColor(i), 1.0), Qt::white, 5));
        if (hasValidation(run.epochs)) {
            QCPGraph* validation = addGraph(plot, run.label + QStringLiteral(" validation"),
                                            runPen(i, 1.2, Qt::DotLine), epochValues(run, validationField, convert));
            validation->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssTriangle, runColor(i), 5));
        }
        for (const EpochRecord& e : run.epochs) {
            for (double v :
                 {convert(double(e.*testField)), convert(double(e.*trainField)), convert(double(e.*validationField))}) {
                if (std::isfinite(v)) {
                    extent.lo = std::min(extent.lo, v);
                    extent.hi = std::max(extent.hi, v);
                }
            }
            extent.lastEpoch = std::max(extent.lastEpoch, double(e.epoch));
        }
    }
    auto ticker = QSharedPointer<QCPAxisTickerFixed>::create();
    ticker->setTickStep(1.0);
    ticker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    plot.xAxis->setTicker(ticker);
    plot.xAxis->setRange(0.5, extent.lastEpoch + 0.5);
    return extent;
}

void fillAccuracy(QCustomPlot& plot, const ReportData& data)
{
    EpochExtent extent = addEpochCurves(plot, data, &EpochRecord::testAccuracy, &EpochRecord::trainAccuracy,
                                        &EpochRecord::validationAccuracy, &toPercent);
    if (extent.hi < extent.lo) {
        extent.lo = 0;
        extent.hi = 100;
    }
    const double pad = std::max(1.0, (extent.hi - extent.lo) * 0.08);
    plot.yAxis->setRange(std::max(0.0, extent.lo - pad), std::min(100.0, extent.hi + pad));
}

// A language model's epochs: train and test loss in bits per character (loss / ln 2).
void fillBitsPerCharacter(QCustomPlot& plot, const ReportData& data)
{
    const EpochExtent extent = addEpochCurves(plot, data, &EpochRecord::testLoss, &EpochRecord::trainLoss,
                                              &EpochRecord::validationLoss, &toBits);
    plot.yAxis->setRange(0, extent.hi > 0 ? extent.hi * 1.1 : 8);
}

// A regression's epochs: train and test RMSE (the square root of the mean squared error).
void fillRmse(QCustomPlot& plot, const ReportData& data)
{
    const EpochExtent extent = addEpochCurves(plot, data, &EpochRecord::testLoss, &EpochRecord::trainLoss,
                                              &EpochRecord::validationLoss, &toRoot);
    plot.yAxis->setRange(0, extent.hi > 0 ? extent.hi * 1.1 : 1);
}

void fillLossScale(QCustomPlot& plot, const ReportData& data)
{
    plot.yAxis->setScaleType(QCPAxis::stLogarithmic);
    plot.yAxis->setTicker(QSharedPointer<Log2Ticker>::create());
    double lo = 0, hi = 0;
    const auto extend = [&](double v) {
        if (std::isfinite(v) && v > 0) {
            lo = lo > 0 ? std::min(lo, v) : v;
            hi = std::max(hi, v);
        }
    };
    for (int i = 0; i < data.runs.size(); ++i) {
        const RunData& run = data.runs[i];
        QCPGraph* line = addGraph(plot, run.label, runPen(i, 1.4), changePoints(run.steps.step, run.steps.lossScale));
        line->setLineStyle(QCPGraph::lsStepLeft);
        for (double v : run.steps.lossScale)
            extend(v);
        QList<const EventRecord*> overflows;
        for (const EventRecord& event : run.events) {
            if (event.kind == EventKind::Overflow && event.scaleBefore > 0)
                overflows << &event;
        }
        if (overflows.isEmpty())
            continue;
        XySeries markers;
        const qsizetype stride = (overflows.size() + kMaxMarkers - 1) / kMaxMarkers;
        for (qsizetype k = 0; k < overflows.size(); k += stride) {
            markers.keys << double(overflows[k]->step);
            markers.values << double(overflows[k]->scaleBefore);
            extend(overflows[k]->scaleBefore);
        }
        QCPGraph* points = addGraph(plot, run.label + QStringLiteral(" overflow"), QPen(Qt::NoPen), markers);
        points->setLineStyle(QCPGraph::lsNone);
        points->setScatterStyle(
            QCPScatterStyle(QCPScatterStyle::ssCross, QPen(runColor(i).darker(130), 1.3), Qt::NoBrush, 6));
    }
    setStepRange(plot.xAxis, data);
    if (lo > 0)
        plot.yAxis->setRange(lo / 2, hi * 2);
    else
        plot.yAxis->setRange(0.5, 2);
}

void fillThroughput(QCustomPlot& plot, const ReportData& data)
{
    double hi = 0;
    for (int i = 0; i < data.runs.size(); ++i) {
        const RunData& run = data.runs[i];
        const XySeries rate = thinMean(run.steps.step, run.steps.samplesPerSecond, 120);
        addGraph(plot, run.label, runPen(i, 1.4), rate);
        for (double v : rate.values) {
            if (std::isfinite(v))
                hi = std::max(hi, v);
        }
    }
    setStepRange(plot.xAxis, data);
    plot.yAxis->setRange(0, hi > 0 ? hi * 1.12 : 1);
}

// One run's shadow heatmap (ReportBlock::run, shadowKind), drawn as the Numerics tab draws it,
// in the report's frame and fonts.
void fillShadowPlot(QCustomPlot& plot, const ReportBlock& block, const ReportData& data)
{
    const ShadowHeatmap heatmap = addShadowHeatmap(plot);
    frame(plot, block.text, QStringLiteral("step"), QString());
    plot.legend->setVisible(false);
    heatmap.scale->axis()->setLabelFont(plotFont(8.5));
    heatmap.scale->axis()->setTickLabelFont(plotFont(7.5));
    if (block.run >= 0 && block.run < data.runs.size())
        fillShadowHeatmap(plot, heatmap, data.runs[block.run].shadow, block.shadowKind);
}

} // namespace

int lossSmoothingWindow(qsizetype steps) { return std::max(5, int(double(steps) * kLossSmoothingFraction)); }

void fillPlot(QCustomPlot& plot, PlotKind kind, const QString& title, const ReportData& data)
{
    ReportBlock block;
    block.kind = ReportBlock::Kind::Plot;
    block.plot = kind;
    block.text = title;
    fillPlot(plot, block, data);
}

void fillPlot(QCustomPlot& plot, const ReportBlock& block, const ReportData& data)
{
    const PlotKind kind = block.plot;
    const QString& title = block.text;
    switch (kind) {
    case PlotKind::Loss:
        frame(plot, title, QStringLiteral("step"), data.lossName());
        fillLoss(plot, data);
        break;
    case PlotKind::Accuracy:
        if (data.reportsBitsPerCharacter()) {
            frame(plot, title, QStringLiteral("epoch"), QStringLiteral("bits per character"));
            fillBitsPerCharacter(plot, data);
        } else if (data.metric() == TaskMetric::Rmse) {
            frame(plot, title, QStringLiteral("epoch"), QStringLiteral("RMSE"));
            fillRmse(plot, data);
        } else {
            frame(plot, title, QStringLiteral("epoch"), QStringLiteral("accuracy (%)"));
            fillAccuracy(plot, data);
        }
        break;
    case PlotKind::LossScale:
        frame(plot, title, QStringLiteral("step"), QStringLiteral("loss scale (log₂ axis)"));
        fillLossScale(plot, data);
        break;
    case PlotKind::Throughput:
        frame(plot, title, QStringLiteral("step"), QStringLiteral("samples/s"));
        fillThroughput(plot, data);
        break;
    case PlotKind::MeanLoss:
        frame(plot, title, QStringLiteral("step"), data.lossName());
        fillMeanPlot(plot, kind, data);
        break;
    case PlotKind::MeanAccuracy:
        frame(plot, title, QStringLiteral("epoch"),
              !data.seeds || data.seeds->metric == TaskMetric::Accuracy
                  ? QStringLiteral("test accuracy (%)")
                  : QStringLiteral("test ") + QString::fromLatin1(taskMetricName(data.seeds->metric)));
        fillMeanPlot(plot, kind, data);
        break;
    case PlotKind::ShadowHeatmap: fillShadowPlot(plot, block, data); break;
    case PlotKind::AdviceSensitivity: fillAdvicePlot(plot, title, data); break;
    }
}

QSize scaledPlotSize(const ReportBlock& block, QSize standard)
{
    return {standard.width(), int(std::lround(standard.height() * block.heightScale))};
}

QByteArray renderPlotPng(const ReportBlock& block, const ReportData& data, QSize size, double scale)
{
    QCustomPlot plot;
    plot.resize(size);
    fillPlot(plot, block, data);
    const QPixmap pixmap = plot.toPixmap(size.width(), size.height(), scale);
    QByteArray png;
    QBuffer buffer(&png);
    buffer.open(QIODevice::WriteOnly);
    pixmap.save(&buffer, "PNG");
    return png;
}

void drawPlot(QCPPainter& painter, const ReportBlock& block, const ReportData& data, QSize size)
{
    QCustomPlot plot;
    plot.resize(size);
    fillPlot(plot, block, data);
    painter.save();
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    plot.toPainter(&painter, size.width(), size.height());
    painter.restore();
}

} // namespace mantissa::report
