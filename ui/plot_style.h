#pragma once
// Colours and pens shared by the monitor and the comparison view, so one run keeps its
// colour across plots.
#include <QColor>
#include <QPen>

class QCPGraph;

namespace mantissa::ui {

// A palette that stays distinguishable for common colour-vision deficiencies (Okabe-Ito).
QColor seriesColor(int index);
// The same colour, faint: raw per-step data drawn behind its smoothed curve.
QColor faint(const QColor& color, int alpha = 60);
QPen seriesPen(int index, double width = 1.6);

} // namespace mantissa::ui
