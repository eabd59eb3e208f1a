#pragma once
// A QCustomPlot with what every Mantissa plot offers: drag to pan and wheel to zoom, a
// context menu to reset the view, toggle a log y axis and save as PNG or PDF, and
// automatic fitting to the data until the user takes over the view.
#include <qcustomplot.h>

#include <functional>

namespace mantissa::ui {

class PlotWidget : public QCustomPlot {
    Q_OBJECT
public:
    explicit PlotWidget(const QString& title, QWidget* parent = nullptr);

    // Fits the axes to the data unless the user zoomed or panned since the last reset.
    void fitIfAuto();
    void resetView();
    // Whether the y axis may be switched to a log scale (not for axes that already are).
    void setLogToggleAllowed(bool allowed) { m_logToggleAllowed = allowed; }
    void setLogY(bool on);
    bool logY() const { return m_logY; }
    bool userView() const { return m_userView; }
    // Marks that the data changed; replotIfDirty() redraws once for any number of changes.
    void markDirty() { m_dirty = true; }
    void replotIfDirty();
    // Writes PNG or PDF by the file's suffix; false when writing failed.
    bool saveTo(const QString& path);
    QString title() const { return m_title; }
    // The heading drawn above the plot (the object name stays the one given at construction).
    void setTitle(const QString& title);
    // Actions of the plot's owner at the top of the context menu, given the x coordinate the
    // user clicked at ("Fork from here…" on a run's loss curve).
    using MenuExtension = std::function<void(QMenu& menu, double x)>;
    void setMenuExtension(MenuExtension extension) { m_menuExtension = std::move(extension); }
    // The context menu for a click at `pos` (widget coordinates), as right-clicking shows it.
    void populateMenu(QMenu& menu, const QPoint& pos);

protected:
    void mousePressEvent(QMouseEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    virtual void fitAxes();

private:
    void showMenu(const QPoint& pos);
    void saveWithDialog(const QString& suffix);

    QString m_title;
    QCPTextElement* m_heading = nullptr;
    bool m_userView = false;
    bool m_logY = false;
    bool m_logToggleAllowed = true;
    bool m_dirty = false;
    MenuExtension m_menuExtension;
};

} // namespace mantissa::ui
