#include "ui/loss_scale_plot.h"

#include "engine/util/format_number.h"

#include <optional>

#include <QToolTip>

#include <cmath>

#include <algorithm>

namespace mantissa::ui {

namespace {

// Labels powers of two as powers ("2¹⁶", "2⁻⁸"): loss scales are 2^k by construction, and
// "1.04858·10⁶" hides that 2^20 is what the scaler chose.
class Log2Ticker : public QCPAxisTickerLog {
protected:
    QString getTickLabel(double tick, const QLocale& locale, QChar formatChar, int precision) override
    {
        const double exponent = std::log2(tick);
        if (std::abs(exponent - std::round(exponent)) > 1e-9 || std::abs(exponent) < 5)
            return QCPAxisTickerLog::getTickLabel(tick, locale, formatChar, precision);
        static const QString superscripts = QString::fromUtf8("⁰¹²³⁴⁵⁶⁷⁸⁹");
        const auto k = static_cast<long long>(std::llround(exponent));
        QString label = "2";
        if (k < 0)
            label += QString::fromUtf8("⁻");
        for (QChar digit : QString::number(std::llabs(k)))
            label += superscripts[digit.digitValue()];
        return label;
    }
};

} // namespace

LossScalePlot::LossScalePlot(QWidget* parent) : PlotWidget(tr("Loss scale"), parent)
{
    setLogToggleAllowed(false); // always logarithmic
    yAxis->setScaleType(QCPAxis::stLogarithmic);
    auto ticker = QSharedPointer<Log2Ticker>::create();
    ticker->setLogBase(2);
    yAxis->setTicker(ticker);
    yAxis->setNumberFormat("g");
    yAxis->setNumberPrecision(6);
    // The legend goes under the plot: the scale hugs the top of the range (it grows until it
    // overflows) and an fp32 line sits at the bottom, so no corner inside is free.
    axisRect()->insetLayout()->take(legend);
    plotLayout()->addElement(plotLayout()->rowCount(), 0, legend);
    plotLayout()->setRowStretchFactor(plotLayout()->rowCount() - 1, 0.001);
    legend->setFillOrder(QCPLegend::foRowsFirst); // one entry per line: run names are long
    yAxis->setLabel(tr("loss scale (log₂)"));
    xAxis->setLabel(tr("step"));
    setMouseTracking(true);
    clearRuns();
}

void LossScalePlot::clearRuns()
{
    clearGraphs();
    m_lines.clear();
    m_markers.clear();
    m_overflows = nullptr;
    m_markerRun = -1;
}

QCPGraph* LossScalePlot::addRun(const QString& name, const QColor& color, bool markers)
{
    QCPGraph* line = addGraph();
    line->setName(name);
    QPen pen(color);
    pen.setWidthF(1.6);
    line->setPen(pen);
    line->setLineStyle(QCPGraph::lsStepLeft);
    m_lines << line;
    if (markers && !m_overflows) {
        m_markerRun = static_cast<int>(m_lines.size()) - 1;
        m_overflows = addGraph();
        m_overflows->setName(tr("overflow (skipped step)"));
        m_overflows->setLineStyle(QCPGraph::lsNone);
        m_overflows->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(QColor(200, 0, 0), 1.5),
                                                     QBrush(QColor(255, 80, 80, 160)), 7));
    }
    return line;
}

void LossScalePlot::sync(int run, const RunRecording& recording)
{
    if (run < 0 || run >= m_lines.size())
        return;
    QCPGraph* line = m_lines[run];
    const int have = line->dataCount();
    if (recording.step.size() > have) {
        line->addData(recording.step.mid(have), recording.lossScale.mid(have), true);
        markDirty();
    }
    if (m_overflows && run == m_markerRun && recording.overflows.size() > m_markers.size()) {
        QVector<double> keys, values;
        for (qsizetype i = m_markers.size(); i < recording.overflows.size(); ++i) {
            keys << recording.overflows[i].step;
            values << recording.overflows[i].scaleBefore;
            m_markers << recording.overflows[i];
        }
        m_overflows->addData(keys, values, true);
        markDirty();
    }
}

const OverflowMarker* LossScalePlot::markerAt(const QPointF& pixel) const
{
    constexpr double radius = 6; // pixels: a marker is 7 px across
    const double lo = xAxis->pixelToCoord(pixel.x() - radius);
    const double hi = xAxis->pixelToCoord(pixel.x() + radius);
    auto first = std::lower_bound(m_markers.begin(), m_markers.end(), std::min(lo, hi),
                                  [](const OverflowMarker& m, double step) { return m.step < step; });
    const OverflowMarker* best = nullptr;
    double bestDistance = radius * radius;
    for (auto it = first; it != m_markers.end() && it->step <= std::max(lo, hi); ++it) {
        const double dx = xAxis->coordToPixel(it->step) - pixel.x();
        const double dy = yAxis->coordToPixel(it->scaleBefore) - pixel.y();
        if (dx * dx + dy * dy <= bestDistance) {
            bestDistance = dx * dx + dy * dy;
            best = &*it;
        }
    }
    return best;
}

void LossScalePlot::mousePressEvent(QMouseEvent* event)
{
    // Copy before the base class runs: a click may start a drag that replots.
    const OverflowMarker* hit = event->button() == Qt::LeftButton ? markerAt(event->position()) : nullptr;
    const std::optional<OverflowMarker> marker = hit ? std::optional<OverflowMarker>(*hit) : std::nullopt;
    PlotWidget::mousePressEvent(event);
    if (marker)
        emit overflowClicked(*marker);
}

void LossScalePlot::mouseMoveEvent(QMouseEvent* event)
{
    PlotWidget::mouseMoveEvent(event);
    if (event->buttons() != Qt::NoButton)
        return;
    if (const OverflowMarker* m = markerAt(event->position())) {
        QString text = tr("Overflow at step %1\nscale %2 → %3\nfirst non-finite gradient: %4")
                           .arg(static_cast<qlonglong>(m->step))
                           .arg(QString::fromStdString(formatScale(m->scaleBefore)))
                           .arg(QString::fromStdString(formatScale(m->scaleAfter)))
                           .arg(m->parameter.isEmpty() ? tr("(unknown)") : m->parameter);
        if (!m->nonFinite.isEmpty())
            text += tr("\nfirst non-finite tensor: %1").arg(m->nonFinite);
        QToolTip::showText(event->globalPosition().toPoint(), text, this);
    } else {
        QToolTip::hideText();
    }
}

} // namespace mantissa::ui
