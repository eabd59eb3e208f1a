#include "ui/plot_widget.h"

#include <QFileDialog>
#include <QMenu>
#include <QMessageBox>

#include <cmath>
#include <limits>

namespace mantissa::ui {

namespace {

// The range of a plottable's finite values, only the positive ones for a log axis; false when
// it has none. QCustomPlot's getValueRange skips NaN but not infinities, and setRange refuses
// a range with an infinite bound, leaving the axis where it was: a diverged 16-bit run records
// an infinite loss, and a loss rounded to 0 has no place on a log axis.
bool finiteValueRange(const QCPAbstractPlottable* plottable, bool positiveOnly, QCPRange& range)
{
    bool found = false;
    range = plottable->getValueRange(found, positiveOnly ? QCP::sdPositive : QCP::sdBoth);
    if (!found || (std::isfinite(range.lower) && std::isfinite(range.upper)))
        return found; // the common case, at QCustomPlot's speed
    const auto* graph = qobject_cast<const QCPGraph*>(plottable);
    if (!graph)
        return false;
    double lower = std::numeric_limits<double>::infinity();
    double upper = -lower;
    for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it) {
        if (std::isfinite(it->value) && (!positiveOnly || it->value > 0)) {
            lower = qMin(lower, it->value);
            upper = qMax(upper, it->value);
        }
    }
    if (lower > upper)
        return false;
    range = QCPRange(lower, upper);
    return true;
}

} // namespace

PlotWidget::PlotWidget(const QString& title, QWidget* parent) : QCustomPlot(parent), m_title(title)
{
    setObjectName(title);
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    // Keep a readable size: the plot must stay legible in a 2x2 grid on a laptop screen.
    setMinimumSize(260, 200);
    plotLayout()->insertRow(0);
    m_heading = new QCPTextElement(this, title, QFont(font().family(), font().pointSize() + 1, QFont::Bold));
    plotLayout()->addElement(0, 0, m_heading);
    legend->setVisible(true);
    legend->setBrush(QColor(255, 255, 255, 210));
    legend->setBorderPen(QPen(QColor(180, 180, 180)));
    QFont legendFont = font();
    legendFont.setPointSize(std::max(7, font().pointSize() - 1));
    legend->setFont(legendFont);
    setContextMenuPolicy(Qt::CustomContextMenu);
    connect(this, &QWidget::customContextMenuRequested, this, &PlotWidget::showMenu);
    // Adaptive sampling (on by default for QCPGraph) keeps tens of thousands of points cheap;
    // antialiasing of many points is the expensive part, so it stays off for graphs.
    setNotAntialiasedElements(QCP::aePlottables);
}

void PlotWidget::setTitle(const QString& title)
{
    m_title = title;
    m_heading->setText(title);
    markDirty();
}

void PlotWidget::mousePressEvent(QMouseEvent* event)
{
    if (event->button() == Qt::LeftButton)
        m_userView = true;
    QCustomPlot::mousePressEvent(event);
}

void PlotWidget::wheelEvent(QWheelEvent* event)
{
    m_userView = true;
    QCustomPlot::wheelEvent(event);
}

void PlotWidget::fitAxes()
{
    rescaleAxes(true);
    // One point on the key axis (a single epoch) would leave QCustomPlot's old, arbitrary
    // width around it; centre a width of two units on it instead.
    bool keyFound = false;
    QCPRange keys;
    for (int i = 0; i < plottableCount(); ++i) {
        bool hasRange = false;
        const QCPRange r = plottable(i)->getKeyRange(hasRange);
        if (!hasRange || !plottable(i)->visible())
            continue;
        keys = keyFound ? QCPRange(qMin(keys.lower, r.lower), qMax(keys.upper, r.upper)) : r;
        keyFound = true;
    }
    if (keyFound && keys.size() <= 0)
        xAxis->setRange(keys.center() - 1, keys.center() + 1);
    // A flat series (a constant learning rate or loss scale) has an empty range, which
    // QCustomPlot answers by keeping the axis's old width; centre it on the data instead.
    for (QCPAxis* axis : {yAxis, yAxis2}) {
        if (!axis->visible())
            continue;
        const bool log = axis->scaleType() == QCPAxis::stLogarithmic;
        bool found = false;
        QCPRange data;
        for (int i = 0; i < plottableCount(); ++i) {
            QCPAbstractPlottable* p = plottable(i);
            QCPRange r;
            if (p->valueAxis() != axis || !p->visible() || !finiteValueRange(p, log, r))
                continue;
            data = found ? QCPRange(qMin(data.lower, r.lower), qMax(data.upper, r.upper)) : r;
            found = true;
        }
        if (!found)
            continue;
        if (log && data.upper / data.lower < 1.5) {
            axis->setRange(data.lower / 2, data.upper * 2);
        } else if (log) {
            // A margin, so a line at the largest or smallest scale does not merge with the frame.
            axis->setRange(data.lower / 1.5, data.upper * 1.5);
        } else if (!log && data.size() <= 1e-6 * qMax(1.0, qAbs(data.center()))) {
            const double half = data.center() != 0 ? qAbs(data.center()) * 0.1 : 0.5;
            axis->setRange(data.center() - half, data.center() + half);
        } else if (!log) {
            axis->setRange(data);
            axis->scaleRange(1.08, data.center());
        }
    }
}

void PlotWidget::fitIfAuto()
{
    if (!m_userView)
        fitAxes();
}

void PlotWidget::resetView()
{
    m_userView = false;
    fitAxes();
    replot();
}

void PlotWidget::setLogY(bool on)
{
    m_logY = on;
    yAxis->setScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    if (on)
        yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
    else
        yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
    fitAxes();
    replot();
}

void PlotWidget::replotIfDirty()
{
    if (!m_dirty)
        return;
    m_dirty = false;
    fitIfAuto();
    replot(QCustomPlot::rpQueuedReplot);
}

bool PlotWidget::saveTo(const QString& path)
{
    if (path.endsWith(".pdf", Qt::CaseInsensitive))
        return savePdf(path);
    return savePng(path, 0, 0, 2.0); // twice the screen resolution, for slides and reports
}

void PlotWidget::saveWithDialog(const QString& suffix)
{
    const QString filter = suffix == "pdf" ? tr("PDF (*.pdf)") : tr("PNG image (*.png)");
    QString name = m_title.toLower().replace(' ', '-').remove(QRegularExpression("[^a-z0-9-]"));
    QString path = QFileDialog::getSaveFileName(this, tr("Save plot"), name + "." + suffix, filter);
    if (path.isEmpty())
        return;
    if (!path.endsWith("." + suffix, Qt::CaseInsensitive))
        path += "." + suffix;
    if (!saveTo(path))
        QMessageBox::warning(this, tr("Save plot"), tr("Could not write %1; is the folder writable?").arg(path));
}

void PlotWidget::showMenu(const QPoint& pos)
{
    QMenu menu(this);
    populateMenu(menu, pos);
    menu.exec(mapToGlobal(pos));
}

void PlotWidget::populateMenu(QMenu& menu, const QPoint& pos)
{
    if (m_menuExtension) {
        m_menuExtension(menu, xAxis->pixelToCoord(pos.x()));
        if (!menu.isEmpty())
            menu.addSeparator();
    }
    menu.addAction(tr("Reset view"), this, &PlotWidget::resetView);
    if (m_logToggleAllowed) {
        QAction* log = menu.addAction(tr("Logarithmic y axis"));
        log->setCheckable(true);
        log->setChecked(m_logY);
        connect(log, &QAction::toggled, this, &PlotWidget::setLogY);
    }
    menu.addSeparator();
    menu.addAction(tr("Save as PNG…"), this, [this] { saveWithDialog("png"); });
    menu.addAction(tr("Save as PDF…"), this, [this] { saveWithDialog("pdf"); });
}

} // namespace mantissa::ui
