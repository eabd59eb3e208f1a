#pragma once
// The loss scale over steps: a step line on a log2 axis (the scale only ever moves by
// powers of the growth and backoff factors), with every overflow (skipped step) marked.
// Hovering a marker tells the step, the scale before and after, and the first parameter
// whose gradient was non-finite.
#include "ui/plot_widget.h"
#include "ui/run_recording.h"

namespace mantissa::ui {

class LossScalePlot : public PlotWidget {
    Q_OBJECT
public:
    explicit LossScalePlot(QWidget* parent = nullptr);

    // One line per run; overflows are marked for the first run added with `markers`.
    QCPGraph* addRun(const QString& name, const QColor& color, bool markers);
    void clearRuns();
    // Appends what `recording` holds beyond what graph `run` already shows.
    void sync(int run, const RunRecording& recording);
    QCPGraph* overflowGraph() const { return m_overflows; }
    // The marker under `pixel` (within a few pixels), or nullptr.
    const OverflowMarker* markerAt(const QPointF& pixel) const;

signals:
    // A click on an overflow marker (the Numerics tab jumps to its step and layer).
    void overflowClicked(const mantissa::ui::OverflowMarker& marker);

protected:
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;

private:
    QList<QCPGraph*> m_lines;
    QCPGraph* m_overflows = nullptr;
    int m_markerRun = -1;
    QVector<OverflowMarker> m_markers; // sorted by step
};

} // namespace mantissa::ui
