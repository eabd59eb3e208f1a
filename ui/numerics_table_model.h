#pragma once
// The numerics lens at one sampled step: one row per measured tensor with its absolute max,
// the fractions that are zero, flush to zero, subnormal or overflow in the run's low
// precision, and the loss scale suggestLossScale() would pick for gradients. Cells whose
// fractions would cost accuracy (above 1%) are coloured so the bad layers stand out.
#include "engine/observe/records.h"

#include <QAbstractTableModel>

namespace mantissa::ui {

class NumericsTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Layer, Tensor, Amax, Zeros, Underflow, Subnormal, Overflow, ScaleUsed, SuggestedScale, ColumnCount };

    explicit NumericsTableModel(QObject* parent = nullptr);

    void setRecord(const NumericsRecord& record);
    const NumericsRecord& record() const { return m_record; }
    // The fraction (0, 1) of nonzero gradient magnitudes the suggested scale lifts into
    // fp16's normal range; 0.01 (the 1st percentile) unless chosen.
    void setPercentile(double fraction);
    double percentile() const { return m_percentile; }
    // Rows of this layer are drawn bold (the layer an overflow was localised to).
    void setHighlightedLayer(const QString& layer);
    // The first row of `layer`, or -1.
    int rowOfLayer(const QString& layer) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    NumericsRecord m_record;
    QString m_highlighted;
    double m_percentile = 0.01;
};

} // namespace mantissa::ui
