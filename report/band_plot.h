#pragma once
// A mean curve with its band on a QCustomPlot, as the Comparison tab and a sweep's report draw
// one per configuration: the band's low and high edges as two QCPGraphs with a channel fill
// between them, the mean on top. Only the mean enters the legend ("mixed-fp16 (n = 8)").
#include "sweep/sweep_curves.h"

#include <QColor>
#include <QString>

class QCPGraph;
class QCustomPlot;

namespace mantissa::report {

struct BandGraphs {
    QCPGraph* mean = nullptr;
    QCPGraph* low = nullptr;
    QCPGraph* high = nullptr; // filled down to `low` (QCPGraph::setChannelFillGraph)
};

// Values are multiplied by `scale` (accuracy fractions drawn as percent). `dashed` draws the
// mean dashed, so that coinciding means still show both colours.
BandGraphs addBandGraphs(QCustomPlot& plot, const sweep::BandCurve& band, const QString& name, const QColor& color,
                         double scale = 1, bool dashed = false);

} // namespace mantissa::report
