#pragma once
// The Numerics tab's shadow error page (numerics.shadow_every): a heatmap of every layer's
// relative RMS error against the same step in fp32 (layers down, shadowed steps across, colour
// the error's log10) for one kind of tensor (outputs, input gradients or weight gradients), and
// the tensors that err most over the run beside it (engine/lens/shadow_summary.h). Reads from
// the run database like the rest of the tab, following a training run on refresh().
#include "engine/observe/records.h"

#include <QWidget>

#include <vector>

class QCPColorMap;
class QCPColorScale;
class QComboBox;
class QCustomPlot;
class QLabel;
class QTableWidget;

namespace mantissa::storage {
class RunStore;
}

namespace mantissa::ui {

class ShadowErrorPanel : public QWidget {
    Q_OBJECT
public:
    explicit ShadowErrorPanel(QWidget* parent = nullptr);

    // Reads run `runId`'s shadowed steps (none: an empty page saying how to record them).
    // Throws what the store throws.
    void setRun(const storage::RunStore* store, qint64 runId);
    // Takes the steps written since the last look; true when new ones arrived.
    bool refresh();
    void clear();
    bool hasSteps() const { return !m_records.empty(); }

    QComboBox* kindCombo() const { return m_kind; }
    QCustomPlot* heatmap() const { return m_plot; }
    QCPColorMap* colorMap() const { return m_map; }
    QTableWidget* worstTable() const { return m_worst; }
    // The heatmap's rows, top to bottom: the tensors of the chosen kind in forward order.
    const QStringList& rowNames() const { return m_rows; }

private:
    void update();

    const storage::RunStore* m_store = nullptr;
    qint64 m_runId = 0;
    std::vector<ShadowRecord> m_records;
    QStringList m_rows;

    QComboBox* m_kind;
    QLabel* m_note;
    QCustomPlot* m_plot;
    QCPColorMap* m_map;
    QCPColorScale* m_scale;
    QTableWidget* m_worst;
};

} // namespace mantissa::ui
