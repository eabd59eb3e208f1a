#include "ui/numerics_table_model.h"

#include "engine/lens/what_if.h"
#include "engine/util/format_number.h"

#include <QBrush>
#include <QColor>
#include <QFont>

#include <cmath>

namespace mantissa::ui {

namespace {

bool isGradient(TensorKind kind) { return kind == TensorKind::ActivationGrad || kind == TensorKind::WeightGrad; }

// Above this a fraction is worth the user's attention: one value in a hundred lost.
constexpr double kWarnFraction = 0.01;

} // namespace

NumericsTableModel::NumericsTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void NumericsTableModel::setRecord(const NumericsRecord& record)
{
    beginResetModel();
    m_record = record;
    endResetModel();
}

void NumericsTableModel::setPercentile(double fraction)
{
    m_percentile = fraction;
    if (!m_record.tensors.empty())
        emit dataChanged(index(0, SuggestedScale), index(rowCount() - 1, SuggestedScale));
}

void NumericsTableModel::setHighlightedLayer(const QString& layer)
{
    if (layer == m_highlighted)
        return;
    m_highlighted = layer;
    if (rowCount() > 0)
        emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1), {Qt::FontRole});
}

int NumericsTableModel::rowOfLayer(const QString& layer) const
{
    for (int row = 0; row < rowCount(); ++row)
        if (QString::fromStdString(m_record.tensors[static_cast<std::size_t>(row)].layer) == layer)
            return row;
    return -1;
}

int NumericsTableModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_record.tensors.size());
}

int NumericsTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant NumericsTableModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const TensorNumerics& t = m_record.tensors[static_cast<std::size_t>(index.row())];
    const TensorStats& s = t.stats;
    const auto percent = [](double f) { return QString::number(100.0 * f, 'f', 2); };
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case Layer: return QString::fromStdString(t.layer);
        case Tensor: return QString("%1 (%2)").arg(QString::fromStdString(t.tensor), tensorKindName(t.kind));
        case Amax: return QString::number(s.amax, 'g', 4);
        case Zeros: return percent(s.fraction(s.zeros));
        case Underflow: return percent(s.fraction(s.underflow));
        case Subnormal: return percent(s.fraction(s.subnormal));
        case Overflow: {
            // Values already non-finite are named, Inf told from NaN: an Inf overflowed, a NaN
            // came from an invalid operation.
            const QString share = percent(s.fraction(s.overflow + s.nonFinite));
            return s.nonFinite == 0 ? share
                                    : QStringLiteral("%1 (%2)").arg(
                                          share, QString::fromStdString(describeNonFinite(s.nonFinite, s.nan)));
        }
        case ScaleUsed:
            return isGradient(t.kind) ? QString::fromStdString(formatScale(m_record.lossScale))
                                      : QString::fromUtf8("—");
        case SuggestedScale: {
            // The loss scale only acts on gradients; weights and activations get none.
            if (!isGradient(t.kind))
                return QString::fromUtf8("—");
            const int shift = m_record.scaledGradients && m_record.lossScale > 0
                                  ? -static_cast<int>(std::lround(std::log2(m_record.lossScale)))
                                  : 0;
            const auto suggestion = suggestLossScale(s.histogram, m_percentile, t.target, shift);
            if (!suggestion)
                return QString::fromUtf8("—");
            const QString scale = QString::fromStdString(formatScale(suggestion->suggested));
            return suggestion->fits ? scale : tr("%1 (clips)").arg(scale);
        }
        default: return {};
        }
    case Qt::TextAlignmentRole:
        return index.column() >= Amax ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    case Qt::BackgroundRole: {
        double f = 0;
        switch (index.column()) {
        case Underflow: f = s.fraction(s.underflow); break;
        case Overflow: f = s.fraction(s.overflow + s.nonFinite); break;
        case Subnormal:
            // Subnormals keep a value but lose precision: a warning, not an alarm.
            return s.fraction(s.subnormal) > kWarnFraction ? QVariant(QBrush(QColor(255, 236, 179))) : QVariant();
        default: return {};
        }
        return f > kWarnFraction ? QVariant(QBrush(QColor(255, 199, 199))) : QVariant();
    }
    case Qt::ForegroundRole:
        // Keep the text readable on the light warning colours whatever the palette.
        if (index.column() == Underflow || index.column() == Overflow || index.column() == Subnormal)
            return QBrush(Qt::black);
        return {};
    case Qt::FontRole:
        if (!m_highlighted.isEmpty() && QString::fromStdString(t.layer) == m_highlighted) {
            QFont font;
            font.setBold(true);
            return font;
        }
        return {};
    case Qt::ToolTipRole:
        if (index.column() == SuggestedScale)
            return tr("The scale that lifts the %1 percentile of nonzero |g| into fp16's normal range "
                      "without overflowing the largest value; the run used %2 at this step.")
                .arg(100.0 * m_percentile, 0, 'g', 3)
                .arg(QString::fromStdString(formatScale(m_record.lossScale)));
        if (index.column() == Overflow)
            return tr("Finite values that round to infinity in %1, plus values already non-finite (%2).")
                .arg(QString::fromLatin1(dtypeName(t.target).data(), qsizetype(dtypeName(t.target).size())),
                     QString::fromStdString(describeNonFinite(s.nonFinite, s.nan)));
        if (index.column() == ScaleUsed)
            return tr("The loss scale the run's scaler used at this step (gradients are multiplied by it "
                      "before they are stored in the low precision).");
        return {};
    default: return {};
    }
}

QVariant NumericsTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case Layer: return tr("Layer");
    case Tensor: return tr("Tensor");
    case Amax: return tr("amax");
    case Zeros: return tr("% zeros");
    case Underflow: return tr("% underflow");
    case Subnormal: return tr("% subnormal");
    case Overflow: return tr("% overflow");
    case ScaleUsed: return tr("Scale used");
    case SuggestedScale: return tr("Suggested scale");
    default: return {};
    }
}

} // namespace mantissa::ui
