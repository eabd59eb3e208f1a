#pragma once
// Two or more runs side by side: loss, test accuracy and loss scale overlaid in distinct
// colours, a results table with the speedup against a chosen baseline, and the config
// settings in which the runs differ.
#include "ui/run_recording.h"

#include <QWidget>

#include <memory>

class QComboBox;
class QLabel;
class QTableView;
class QTableWidget;

namespace mantissa::ui {

class ComparisonTableModel;
struct LossCurve;
class LossScalePlot;
class PlotWidget;

class ComparisonView : public QWidget {
    Q_OBJECT
public:
    explicit ComparisonView(QWidget* parent = nullptr);

    void setRuns(QList<std::shared_ptr<const RunRecording>> runs);
    int runCount() const { return static_cast<int>(m_runs.size()); }
    ComparisonTableModel* resultsModel() const { return m_results; }
    QTableWidget* diffTable() const { return m_diff; }
    // The warning shown when the runs did not see the same data (dataMismatchWarning); empty
    // and hidden when they did.
    QString dataWarning() const;
    QList<PlotWidget*> plots() const;

private:
    void rebuildPlots();
    void rebuildDiff();
    // A fork's branch point on the loss plot, and its parent's curve before it when the parent
    // is not among the runs compared.
    void drawBranch(int index, const LossCurve& curve);

    QList<std::shared_ptr<const RunRecording>> m_runs;
    QLabel* m_heading;
    QLabel* m_dataWarning;
    QComboBox* m_baseline;
    PlotWidget* m_loss;
    PlotWidget* m_accuracy;
    LossScalePlot* m_scale;
    ComparisonTableModel* m_results;
    QTableView* m_resultsView;
    QTableWidget* m_diff;
};

} // namespace mantissa::ui
