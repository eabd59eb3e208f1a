// The precision advice's sensitivity chart: a row per GEMM layer, top to bottom in the model's
// order (as the shadow heatmap lists layers), and per format a bar of the loss increase the
// advisor counted for that layer in that format. The format each layer was given is drawn
// solid, the others pale, so the chart reads as "what each layer costs, and what was chosen".
#include "report/plot_palette.h"
#include "report/report_plots.h"

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

namespace mantissa::report {

namespace {

// The share of a row's height the bars of one layer fill together.
constexpr double kRowFill = 0.8;

QColor pale(QColor color)
{
    color.setAlpha(70);
    return color;
}

} // namespace

void fillAdvicePlot(QCustomPlot& plot, const QString& title, const ReportData& data)
{
    if (!data.advice)
        return;
    const AdviceSummary& advice = *data.advice;
    frame(plot, title,
          advice.estimated ? QStringLiteral("held-out loss increase (estimated from the score; probed where marked)")
                           : QStringLiteral("held-out loss increase, that layer alone in the format (probe)"),
          QString());
    const auto formats = static_cast<int>(advice.formats.size());
    const auto layers = static_cast<int>(advice.layers.size());
    const double width = kRowFill / std::max(1, formats);
    double low = 0, high = 0;
    for (int f = 0; f < formats; ++f) {
        // Two series per format at the same offset: the layers that chose it, and the others.
        auto* chosen = new QCPBars(plot.yAxis, plot.xAxis);
        auto* other = new QCPBars(plot.yAxis, plot.xAxis);
        const QColor color = runColor(f + 1); // colour 0 is the baseline's in the other plots
        chosen->setName(advice.formats[f] + QStringLiteral(" (solid: chosen)"));
        chosen->setBrush(color);
        chosen->setPen(QPen(color.darker(130), 0));
        other->setBrush(pale(color));
        other->setPen(QPen(pale(color), 0));
        other->removeFromLegend();
        for (QCPBars* bars : {chosen, other})
            bars->setWidth(width);
        const double offset = (f - (formats - 1) / 2.0) * width;
        for (int l = 0; l < layers; ++l) {
            const double cost = advice.costs[l][f];
            if (!std::isfinite(cost)) // the layer cannot take the format: no bar
                continue;
            (advice.chosen[l] == f ? chosen : other)->addData(l + offset, cost);
            low = std::min(low, cost);
            high = std::max(high, cost);
        }
    }
    // The probed layers of an estimate, marked where their bars end.
    if (advice.estimated) {
        QCPGraph* marks = plot.addGraph(plot.yAxis, plot.xAxis);
        marks->setName(QStringLiteral("probed"));
        marks->setLineStyle(QCPGraph::lsNone);
        marks->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDiamond, QColor(40, 40, 40), 6));
        for (int f = 0; f < formats; ++f)
            for (int l = 0; l < layers; ++l)
                if (advice.probed[l][f] && std::isfinite(advice.costs[l][f]))
                    marks->addData(l + (f - (formats - 1) / 2.0) * width, advice.costs[l][f]);
    }
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    for (int l = 0; l < layers; ++l)
        ticker->addTick(l, advice.layers[l]);
    plot.yAxis->setTicker(ticker);
    plot.yAxis->setSubTicks(false);
    plot.yAxis->grid()->setVisible(false);
    plot.yAxis->setRangeReversed(true); // the first layer on top
    plot.yAxis->setRange(-0.6, layers - 0.4);
    const double pad = 0.05 * std::max(high - low, 1e-6);
    plot.xAxis->setRange(low - (low < 0 ? pad : 0), high + pad);
    plot.xAxis->grid()->setZeroLinePen(QPen(QColor(90, 90, 90), 0));
}

} // namespace mantissa::report
