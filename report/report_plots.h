#pragma once
// The report's plots, drawn by an offscreen QCustomPlot (the widget is never shown, but
// it needs a QApplication): loss (train per step, test per epoch), accuracy, the loss
// scale on a log2 axis with overflow markers, and throughput; runs overlaid with a legend.
#include "report/report_data.h"
#include "report/report_document.h"

#include <QByteArray>
#include <QSize>

class QCPPainter;
class QFont;
class QCustomPlot;

namespace mantissa::report {

// Step curves are thinned to about this many points per run before drawing.
constexpr int kMaxPlotPoints = 1500;
// The training loss is drawn per step (faint) and as a running mean over this fraction of
// the steps (at least 5): about 60 independent points across the plot.
constexpr double kLossSmoothingFraction = 1.0 / 60.0;

// The window of that running mean for a run of `steps` steps.
int lossSmoothingWindow(qsizetype steps);

// The mean curves with bands of data.seeds (report_seed_plots.cpp): `kind` MeanLoss or MeanAccuracy.
void fillMeanPlot(QCustomPlot& plot, PlotKind kind, const ReportData& data);

// Fills an empty `plot` with the plot block `block` of `data`: the curves of its kind for every
// run (or one run's shadow heatmap), its title, labelled axes and the legend.
void fillPlot(QCustomPlot& plot, const ReportBlock& block, const ReportData& data);
// The same for a plot of every run: `kind` titled `title`.
void fillPlot(QCustomPlot& plot, PlotKind kind, const QString& title, const ReportData& data);

// `standard` with its height times the block's heightScale.
QSize scaledPlotSize(const ReportBlock& block, QSize standard);

// The report's frame around a plot: the title on top, labelled axes, the legend under the axes.
void frame(QCustomPlot& plot, const QString& title, const QString& xLabel, const QString& yLabel);
// The report's plot font.
QFont plotFont(double pointSize, bool bold = false);

// The advice's sensitivity chart (ReportData::advice; advice_plot.cpp).
void fillAdvicePlot(QCustomPlot& plot, const QString& title, const ReportData& data);

// PNG of the plot at `size` logical pixels, `scale` device pixels per logical pixel.
QByteArray renderPlotPng(const ReportBlock& block, const ReportData& data, QSize size, double scale = 2.0);

// Draws the plot as vectors through `painter` into the rectangle (0, 0, size) of its
// current coordinate system; for the PDF.
void drawPlot(QCPPainter& painter, const ReportBlock& block, const ReportData& data, QSize size);

} // namespace mantissa::report
