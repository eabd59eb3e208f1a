#pragma once
// The Numerics tab's page for sub-16-bit recipes: the table of what the quantisation did to
// every GEMM input at the selected step (GemmInputTableModel) and, beside it, the histogram of
// the block scales' binary exponents of the selected row, with the blocks that clipped.
#include "engine/observe/records.h"

#include <QWidget>

class QCPBars;
class QCustomPlot;
class QTableView;

namespace mantissa::ui {

class GemmInputTableModel;

class GemmInputPanel : public QWidget {
    Q_OBJECT
public:
    explicit GemmInputPanel(QWidget* parent = nullptr);

    // Shows `record`'s GEMM inputs, keeping the selected row (by layer, GEMM and operand) when
    // the new record has it, else selecting the first.
    void setRecord(const NumericsRecord& record);
    void selectRow(int row);
    int selectedRow() const;

    GemmInputTableModel* model() const { return m_model; }
    QTableView* table() const { return m_table; }
    QCustomPlot* histogram() const { return m_plot; }
    QCPBars* histogramBars() const { return m_bars; }

private:
    void updateHistogram();

    GemmInputTableModel* m_model;
    QTableView* m_table;
    QCustomPlot* m_plot;
    QCPBars* m_bars;
};

} // namespace mantissa::ui
