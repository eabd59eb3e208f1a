#pragma once
// The numerics lens for sub-16-bit recipes at one sampled step: one row per quantised GEMM
// input (layer, GEMM, operand) with its format, block count, the share of blocks whose
// largest value clipped, the share of values flushed to zero, the SQNR of the quantised values
// against the fp32 ones, and the range of the block scales' exponents. Shares above 1% and an
// SQNR below 10 dB are coloured, so the layers that lose the most stand out.
#include "engine/observe/records.h"

#include <QAbstractTableModel>

namespace mantissa::ui {

class GemmInputTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column {
        Layer,
        Gemm,
        Operand,
        Format,
        Blocks,
        Clipped,
        Flushed,
        Sqnr,
        ScaleExponents,
        NonFinite,
        ColumnCount
    };

    explicit GemmInputTableModel(QObject* parent = nullptr);

    void setRecord(const NumericsRecord& record);
    const std::vector<GemmInputNumerics>& inputs() const { return m_inputs; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::vector<GemmInputNumerics> m_inputs;
};

} // namespace mantissa::ui
