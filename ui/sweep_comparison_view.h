#pragma once
// The Comparison tab for a sweep (or runs of one configuration over several seeds): per
// configuration the mean curve with a band (min-max or the mean's 95% interval, selectable)
// of the train loss per step and the test accuracy per epoch, the statistics table (mean, sd
// and 95% interval of each final metric, the divergence rate) and the sentence per pair.
#include "ui/sweep_comparison.h"

#include <QWidget>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QTableWidget;

namespace mantissa::ui {

class PlotWidget;

class SweepComparisonView : public QWidget {
    Q_OBJECT
public:
    explicit SweepComparisonView(QWidget* parent = nullptr);

    void setComparison(SweepComparison comparison);
    const SweepComparison& comparison() const { return m_comparison; }
    sweep::BandKind bandKind() const;
    void setBandKind(sweep::BandKind kind);

    PlotWidget* lossPlot() const { return m_loss; }
    PlotWidget* accuracyPlot() const { return m_accuracy; }
    QTableWidget* statisticsTable() const { return m_table; }
    QLabel* sentences() const { return m_sentences; }
    // The equivalence margins the verdicts use (the test metric in its unit: accuracy in points,
    // RMSE, bits per character; train loss).
    QDoubleSpinBox* accuracyMargin() const { return m_accuracyMargin; }
    QDoubleSpinBox* lossMargin() const { return m_lossMargin; }

private:
    void configureTestMetric();
    void rebuildPlots();
    void rebuildTable();

    SweepComparison m_comparison;
    QLabel* m_heading;
    QComboBox* m_band;
    PlotWidget* m_loss;
    PlotWidget* m_accuracy;
    QTableWidget* m_table;
    QLabel* m_sentences;
    QLabel* m_rule;
    QDoubleSpinBox* m_accuracyMargin;
    QLabel* m_testMarginName;
    TaskMetric m_marginMetric = TaskMetric::Accuracy; // the unit m_accuracyMargin is in
    QDoubleSpinBox* m_lossMargin;
    void rebuildSentences();
};

} // namespace mantissa::ui
