#include "ui/gemm_input_table_model.h"

#include <QBrush>
#include <QColor>

#include <cmath>

namespace mantissa::ui {

namespace {

// Above this a share is worth the user's attention: one block or value in a hundred.
constexpr double kWarnFraction = 0.01;
// Below this the quantisation noise is within a factor 10 of the signal's energy (each 6 dB
// is one bit of precision).
constexpr double kWarnSqnrDb = 10.0;

QString key(std::string_view k) { return QString::fromLatin1(k.data(), qsizetype(k.size())); }

QString percent(double f) { return QString::number(100.0 * f, 'f', 2); }

QString sqnrText(double db)
{
    if (std::isnan(db))
        return QString::fromUtf8("—");
    if (std::isinf(db))
        return db > 0 ? GemmInputTableModel::tr("exact") : QStringLiteral("-inf");
    return QString::number(db, 'f', 1);
}

} // namespace

GemmInputTableModel::GemmInputTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void GemmInputTableModel::setRecord(const NumericsRecord& record)
{
    beginResetModel();
    m_inputs = record.gemmInputs;
    endResetModel();
}

int GemmInputTableModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_inputs.size());
}

int GemmInputTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant GemmInputTableModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const GemmInputNumerics& g = m_inputs[static_cast<std::size_t>(index.row())];
    const QuantStats& s = g.stats;
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case Layer: return QString::fromStdString(g.layer);
        case Gemm: return key(enumKey(g.pass));
        case Operand: return key(enumKey(g.operand));
        case Format: return QString::fromStdString(g.format);
        case Blocks: return QString::number(s.blocks);
        case Clipped: return percent(s.clippedBlockFraction());
        case Flushed: return percent(s.flushedFraction());
        case Sqnr: return sqnrText(s.sqnrDb());
        case ScaleExponents: {
            if (s.scaleExponents.empty())
                return QString::fromUtf8("—");
            const int low = s.scaleExponents.begin()->first, high = s.scaleExponents.rbegin()->first;
            return low == high ? QString::number(low) : QStringLiteral("%1 … %2").arg(low).arg(high);
        }
        case NonFinite:
            return s.nonFinite == 0 ? QStringLiteral("0")
                                    : QString::fromStdString(
                                          describeNonFinite(std::int64_t(s.nonFinite), std::int64_t(s.nanInputs)));
        default: return {};
        }
    case Qt::TextAlignmentRole:
        return index.column() >= Blocks ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    case Qt::BackgroundRole: {
        const bool warn = (index.column() == Clipped && s.clippedBlockFraction() > kWarnFraction) ||
                          (index.column() == Flushed && s.flushedFraction() > kWarnFraction) ||
                          (index.column() == Sqnr && s.sqnrDb() < kWarnSqnrDb) ||
                          (index.column() == NonFinite && s.nonFinite > 0);
        return warn ? QVariant(QBrush(QColor(255, 199, 199))) : QVariant();
    }
    case Qt::ForegroundRole:
        // Keep the text readable on the light warning colour whatever the palette.
        return index.column() >= Clipped ? QVariant(QBrush(Qt::black)) : QVariant();
    case Qt::ToolTipRole:
        switch (index.column()) {
        case Clipped:
            return tr("%1 of %2 blocks had their largest value saturate to the format's largest (a scale "
                      "rounded down: OCP MX's floor rule clips).")
                .arg(s.clippedBlocks)
                .arg(s.blocks);
        case Flushed:
            return tr("%1 of %2 nonzero values came back as zero: too small for their block's scale.")
                .arg(s.flushedToZero)
                .arg(s.elements);
        case Sqnr:
            return tr("Signal-to-quantisation-noise ratio: 10 log10(Σx² / Σ(q − x)²) of the quantised values q "
                      "against the fp32 values x of the same step. Each 6 dB is one bit of precision.");
        case ScaleExponents:
            return tr("Binary exponents of the block scales (the histogram beside the table shows their counts).");
        default: return {};
        }
    default: return {};
    }
}

QVariant GemmInputTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case Layer: return tr("Layer");
    case Gemm: return tr("GEMM");
    case Operand: return tr("Operand");
    case Format: return tr("Format");
    case Blocks: return tr("Blocks");
    case Clipped: return tr("% clipped blocks");
    case Flushed: return tr("% flushed");
    case Sqnr: return tr("SQNR dB");
    case ScaleExponents: return tr("Scale exponents");
    case NonFinite: return tr("Non-finite");
    default: return {};
    }
}

} // namespace mantissa::ui
