#pragma once
// The Numerics tab: what the run's low precision made of every layer's tensors on the
// sampled steps (RunConfig::numerics). A heatmap of one chosen tensor (step on x, binary
// exponent of |x| on y, colour = fraction of its values in that binade) with the limits of
// the type it was measured against (TensorNumerics::target) and the loss scale's reach drawn
// across it, and a per-layer table at the
// selected step; under a sub-16-bit recipe, a second page with what the quantisation did to
// each GEMM input at that step (gemm_input_panel.h). Reads from the run database, for a finished run opened from the run
// browser and, live, for a GUI run while it trains: the numerics records are large and do
// not travel through the RecordBuffer, so the tab follows the run's rows as the writer
// commits them (at least once a second) and takes the new steps on refresh().
#include "engine/observe/records.h"
#include "storage/run_types.h"

#include <QList>
#include <QWidget>

class QCPColorMap;
class QCPColorScale;
class QCPGraph;
class QCPItemStraightLine;
class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QCustomPlot;
class QLabel;
class QMouseEvent;
class QTableView;
class QTabWidget;

namespace mantissa::storage {
class RunStore;
}

namespace mantissa::ui {

class GemmInputPanel;
class NumericsTableModel;
class ShadowErrorPanel;

class NumericsView : public QWidget {
    Q_OBJECT
public:
    explicit NumericsView(QWidget* parent = nullptr);

    // Reads run `runId`'s statistics; an empty view (with a note why) when it has none.
    // Throws what the store throws.
    void setRun(const storage::RunStore* store, qint64 runId);
    void clear(const QString& note = {});
    // Follows run `runId` while it trains: shows what is written so far, then takes the
    // steps written since on each refresh(). Throws what the store throws.
    void follow(const storage::RunStore* store, qint64 runId);
    // Reads the sampled steps written since the last look; true when new ones arrived.
    // A table showing the latest step moves on to the new latest. Throws what the store throws.
    bool refresh();
    qint64 runId() const { return m_runId; }

    // Selects the sampled step nearest `step` and, when known, marks `layer`'s rows.
    void selectStep(qint64 step, const QString& layer = {});
    qint64 selectedStep() const;
    const QList<qint64>& steps() const { return m_steps; }

    QCustomPlot* heatmap() const { return m_plot; }
    QCPColorMap* colorMap() const { return m_map; }
    NumericsTableModel* tableModel() const { return m_model; }
    // Under a sub-16-bit recipe, the page with its GEMM inputs' block statistics at the
    // selected step; the tables' tab widget holds it beside the per-tensor table.
    GemmInputPanel* gemmInputPanel() const { return m_gemmInputs; }
    QTabWidget* tableTabs() const { return m_tables; }
    // The tab's two pages: the lens's statistics, and the shadow error track (shadow_error_panel.h).
    QTabWidget* pages() const { return m_pages; }
    ShadowErrorPanel* shadowPanel() const { return m_shadow; }
    QComboBox* layerCombo() const { return m_layer; }
    QComboBox* kindCombo() const { return m_kind; }
    QComboBox* stepCombo() const { return m_step; }
    // Gradients as the run stored them (multiplied by the loss scale) instead of unscaled.
    QCheckBox* scaledCheck() const { return m_scaled; }
    // The percentile (in %) of nonzero |g| the table's suggested scales lift into range.
    QDoubleSpinBox* percentileSpin() const { return m_percentile; }

private:
    void fillLayers(const NumericsRecord& first);
    void updateHeatmap();
    void updateTable();
    void drawLimits(double firstStep, double lastStep, DType target);
    void onPlotClicked(QMouseEvent* event);

    const storage::RunStore* m_store = nullptr;
    qint64 m_runId = 0;
    QList<qint64> m_steps;
    // (layer, kind) -> tensor name, from the first sampled step.
    QList<TensorNumerics> m_tensors;
    bool m_quantisedGemmInputs = false; // the run's recipe quantised GEMM inputs (its first record has them)

    QComboBox* m_layer;
    QComboBox* m_kind;
    QComboBox* m_step;
    QCheckBox* m_scaled;
    QDoubleSpinBox* m_percentile;
    QLabel* m_note;
    QCustomPlot* m_plot;
    QCPColorMap* m_map;
    QCPColorScale* m_scale;
    QList<QCPGraph*> m_limitGraphs;
    QCPItemStraightLine* m_stepMarker; // the step the table shows
    QTableView* m_table;
    NumericsTableModel* m_model;
    QTabWidget* m_tables;
    GemmInputPanel* m_gemmInputs;
    QTabWidget* m_pages;
    ShadowErrorPanel* m_shadow;
    QString m_highlightedLayer;
};

} // namespace mantissa::ui
