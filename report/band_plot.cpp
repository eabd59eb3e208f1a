#include "report/band_plot.h"

#include <qcustomplot.h>

namespace mantissa::report {

namespace {

QVector<double> scaled(const QVector<double>& values, double scale)
{
    QVector<double> out(values.size());
    for (qsizetype i = 0; i < values.size(); ++i)
        out[i] = values[i] * scale;
    return out;
}

} // namespace

BandGraphs addBandGraphs(QCustomPlot& plot, const sweep::BandCurve& band, const QString& name, const QColor& color,
                         double scale, bool dashed)
{
    BandGraphs graphs;
    QColor edge = color;
    edge.setAlpha(90);
    QColor fill = color;
    fill.setAlpha(50);
    graphs.low = plot.addGraph();
    graphs.low->setObjectName(QStringLiteral("band low"));
    graphs.low->setPen(QPen(edge, 1));
    graphs.low->setData(band.key, scaled(band.low, scale), true);
    graphs.high = plot.addGraph();
    graphs.high->setObjectName(QStringLiteral("band high"));
    graphs.high->setPen(QPen(edge, 1));
    graphs.high->setBrush(fill);
    graphs.high->setChannelFillGraph(graphs.low);
    graphs.high->setData(band.key, scaled(band.high, scale), true);
    graphs.mean = plot.addGraph();
    graphs.mean->setObjectName(QStringLiteral("mean"));
    graphs.mean->setName(name);
    QPen pen(color, 2);
    if (dashed)
        pen.setStyle(Qt::DashLine);
    graphs.mean->setPen(pen);
    graphs.mean->setData(band.key, scaled(band.mean, scale), true);
    graphs.low->removeFromLegend();
    graphs.high->removeFromLegend();
    return graphs;
}

} // namespace mantissa::report
