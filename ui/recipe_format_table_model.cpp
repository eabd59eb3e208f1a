#include "ui/recipe_format_table_model.h"

#include "engine/numerics/minifloat_format.h"
#include "ui/enum_combo.h"

#include <QBrush>
#include <QColor>

#include <cmath>

namespace mantissa::ui {

namespace {

// As the Numerics tab's GEMM inputs page (gemm_input_table_model.cpp): one block or value in a
// hundred, or quantisation noise within a factor 10 of the signal.
constexpr double kWarnFraction = 0.01;
constexpr double kWarnSqnrDb = 10.0;

const QString kDash = QString::fromUtf8("—");

QString percent(double f) { return QString::number(100.0 * f, 'f', 2) + " %"; }

QString powerOfTwo(int exponent) { return QStringLiteral("2^%1").arg(exponent); }

// Short, for a narrow column; the row's tooltip says what the scale does.
QString scaleText(const OperandFormat& of, const RecipeOptions& options)
{
    const QuantFormat& f = of.format;
    QString text;
    if (of.tile2d > 0)
        text = RecipeFormatTableModel::tr("fp32 per %1×%1 tile").arg(of.tile2d);
    else if (of.delayed)
        text = RecipeFormatTableModel::tr("fp32, amax of %1 steps").arg(options.amaxHistory);
    else
        switch (f.scheme) {
        case ScalingScheme::None: text = RecipeFormatTableModel::tr("none"); break;
        case ScalingScheme::PerTensor: text = RecipeFormatTableModel::tr("fp32 per tensor"); break;
        case ScalingScheme::Fp32Blocks: text = RecipeFormatTableModel::tr("fp32 per block"); break;
        case ScalingScheme::Mx: text = QStringLiteral("E8M0 (%1)").arg(fromView(enumKey(f.scaleRule))); break;
        case ScalingScheme::Nvfp4: text = RecipeFormatTableModel::tr("E4M3 × fp32 per tensor"); break;
        }
    if (f.powerOfTwoScales)
        text += RecipeFormatTableModel::tr(", powers of two");
    return text;
}

QString blockText(const OperandFormat& of)
{
    if (of.tile2d > 0)
        return QStringLiteral("%1×%1").arg(of.tile2d);
    if (!of.format.isBlocked())
        return RecipeFormatTableModel::tr("whole tensor");
    return QStringLiteral("%1×%2").arg(of.format.blockRows).arg(of.format.blockSize); // 16×16: NVFP4's weight tiles
}

QString sqnrText(double db)
{
    if (std::isnan(db))
        return kDash;
    if (std::isinf(db))
        return db > 0 ? RecipeFormatTableModel::tr("exact") : QStringLiteral("-inf");
    return QString::number(db, 'f', 1) + " dB";
}

bool isMeasuredRow(int row) { return row >= RecipeFormatTableModel::MeasuredAmax; }
bool isQuantisationRow(int row) { return row >= RecipeFormatTableModel::ClippedBlocks; }

} // namespace

QString formatLimitText(double value)
{
    int exponent = 0;
    // A power of two below 1 reads better with its exponent beside it (2^-9 = 0.001953125).
    if (value > 0 && value < 1 && std::frexp(value, &exponent) == 0.5)
        return QStringLiteral("%1 (%2)").arg(QString::number(value, 'g', 4), powerOfTwo(exponent - 1));
    return QString::number(value, 'g', 6);
}

RecipeFormatTableModel::RecipeFormatTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void RecipeFormatTableModel::setRecipe(GemmRecipe recipe, const RecipeOptions& options)
{
    beginResetModel();
    m_recipe = recipe;
    m_options = options;
    if (recipe != GemmRecipe::None)
        for (const auto& entry : enumEntries<GemmOperand>())
            m_formats[static_cast<std::size_t>(entry.value)] = operandFormat(recipe, entry.value, options);
    endResetModel();
}

void RecipeFormatTableModel::setMeasurement(std::optional<RecipeMeasurement> measurement, bool sameRecipe)
{
    beginResetModel();
    m_measurement = std::move(measurement);
    m_sameRecipe = sameRecipe;
    endResetModel();
}

int RecipeFormatTableModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() || m_recipe == GemmRecipe::None ? 0 : RowCount;
}

int RecipeFormatTableModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(enumEntries<GemmOperand>().size());
}

QVariant RecipeFormatTableModel::value(Row row, GemmOperand operand) const
{
    const MiniFloatFormat& element = miniFloatFormat(format(operand).format.element);
    switch (row) {
    case Max: return double(element.maxFinite());
    case MinNormal: return double(element.minNormal());
    case MinSubnormal: return double(element.minSubnormal());
    case SpanBinades: return std::log2(double(element.maxFinite()) / double(element.minSubnormal()));
    case MeasuredSpan:
        if (m_measurement && (*m_measurement)[operand].smallest)
            return (*m_measurement)[operand].widestSpanBinades;
        return {};
    default: return {};
    }
}

QVariant RecipeFormatTableModel::display(Row row, GemmOperand operand) const
{
    const OperandFormat& of = format(operand);
    switch (row) {
    case Format: return QString::fromStdString(operandFormatLabel(of));
    case Element: return fromView(enumEntry(of.format.element).displayName);
    case Block: return blockText(of);
    case Scale: return scaleText(of, m_options);
    case Rounding:
        return of.format.encoding.rounding == mantissa::Rounding::Stochastic ? tr("stochastic (seeded)")
                                                                             : tr("nearest even");
    case Max:
    case MinNormal:
    case MinSubnormal: return formatLimitText(value(row, operand).toDouble());
    case SpanBinades: return QString::number(value(row, operand).toDouble(), 'f', 1);
    default: break;
    }
    if (!m_measurement)
        return kDash;
    const OperandMeasurement& m = (*m_measurement)[operand];
    switch (row) {
    case MeasuredAmax:
        if (m.tensors == 0)
            return kDash;
        return m.amaxLow == m.amaxHigh ? QString::number(m.amaxHigh, 'g', 3)
                                       : QStringLiteral("%1 – %2").arg(QString::number(m.amaxLow, 'g', 3),
                                                                       QString::number(m.amaxHigh, 'g', 3));
    case MeasuredSmallest:
        if (m.tensors == 0)
            return kDash;
        if (!m.smallest)
            return tr("all zero");
        return (*m.smallest <= lowestMeasurableExponent() ? QStringLiteral("≤ ") : QString()) + powerOfTwo(*m.smallest);
    case MeasuredSpan: return m.smallest ? QString::number(m.widestSpanBinades, 'f', 1) : kDash;
    default: break;
    }
    if (!m_sameRecipe || !m.quantized)
        return kDash;
    const QuantStats& q = *m.quantized;
    switch (row) {
    case ClippedBlocks: return percent(q.clippedBlockFraction());
    case Flushed: return percent(q.flushedFraction());
    case Sqnr: return sqnrText(q.sqnrDb());
    default: return {};
    }
}

bool RecipeFormatTableModel::warns(Row row, GemmOperand operand) const
{
    if (!m_measurement)
        return false;
    const OperandMeasurement& m = (*m_measurement)[operand];
    // A tensor spans more binades than the element format holds: under one scale for the
    // tensor, what lies that far below its amax flushes to zero (blocks rescale, so for a
    // block format this is an upper bound on the loss).
    // Only a format with one scale for the whole tensor is judged so: a block format's
    // blocks each rescale, and what they lose shows in the clipped and flushed rows.
    if (row == MeasuredSpan)
        return m.smallest && !format(operand).format.isBlocked() && format(operand).tile2d == 0 &&
               m.widestSpanBinades > value(SpanBinades, operand).toDouble();
    if (!m_sameRecipe || !m.quantized)
        return false;
    const QuantStats& q = *m.quantized;
    return (row == ClippedBlocks && q.clippedBlockFraction() > kWarnFraction) ||
           (row == Flushed && q.flushedFraction() > kWarnFraction) || (row == Sqnr && q.sqnrDb() < kWarnSqnrDb);
}

QVariant RecipeFormatTableModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const auto row = static_cast<Row>(index.row());
    const GemmOperand operand = enumEntries<GemmOperand>()[static_cast<std::size_t>(index.column())].value;
    switch (role) {
    case Qt::DisplayRole: return display(row, operand);
    case ValueRole: return value(row, operand);
    case Qt::TextAlignmentRole: return row >= Max ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    case Qt::BackgroundRole: return warns(row, operand) ? QVariant(QBrush(QColor(255, 199, 199))) : QVariant();
    case Qt::ForegroundRole: return warns(row, operand) ? QVariant(QBrush(Qt::black)) : QVariant();
    case Qt::ToolTipRole:
        if (isMeasuredRow(row) && !m_measurement)
            return tr("Not measured yet: run this model with Training → Statistics every N steps.");
        if (isQuantisationRow(row) && !m_sameRecipe)
            return tr("Measured only by a run with this recipe and these options.");
        return headerData(index.row(), Qt::Vertical, Qt::ToolTipRole);
    default: return {};
    }
}

QVariant RecipeFormatTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation == Qt::Horizontal) {
        if (role == Qt::DisplayRole && section >= 0 && section < columnCount()) {
            const GemmOperand operand = enumEntries<GemmOperand>()[static_cast<std::size_t>(section)].value;
            return operand == GemmOperand::Activation ? tr("Activations")
                   : operand == GemmOperand::Weight   ? tr("Weights")
                                                      : tr("Gradients");
        }
        if (role == Qt::ToolTipRole && section >= 0 && section < columnCount())
            return fromView(enumEntries<GemmOperand>()[static_cast<std::size_t>(section)].description);
        return QAbstractTableModel::headerData(section, orientation, role);
    }
    if (role == Qt::DisplayRole) {
        switch (section) {
        case Format: return tr("Format");
        case Element: return tr("Element");
        case Block: return tr("Block");
        case Scale: return tr("Scale");
        case Rounding: return tr("Rounding");
        case Max: return tr("Max");
        case MinNormal: return tr("Min normal");
        case MinSubnormal: return tr("Min subnormal");
        case SpanBinades: return tr("Binades");
        case MeasuredAmax: return tr("Measured amax");
        case MeasuredSmallest: return tr("Smallest |x| ≠ 0");
        case MeasuredSpan: return tr("Widest span");
        case ClippedBlocks: return tr("Clipped blocks");
        case Flushed: return tr("Flushed to 0");
        case Sqnr: return tr("SQNR");
        default: return {};
        }
    }
    if (role == Qt::ToolTipRole) {
        switch (section) {
        case Format: return tr("The operand's format as the Numerics tab labels it.");
        case Block:
            return tr("The values that share one scale: 1×N along a row (the GEMM's K), N×N tiles, or "
                      "the whole tensor.");
        case Scale:
            return tr("The scale's format: fp32 per tensor (current amax, or the largest of an amax history), "
                      "fp32 per block or tile, E8M0 powers of two per 32-value block rounded by the scale rule "
                      "(MX), or an E4M3 scale per 16 values times an fp32 scale per tensor (NVFP4).");
        case Rounding:
            return tr("How the elements round: to nearest even, or stochastically (seeded by "
                      "training.seed, so a run repeats bit for bit).");
        case Max: return tr("The element format's largest finite value; the scale maps a block's amax near it.");
        case MinNormal: return tr("The smallest normal value: below it precision falls off bit by bit.");
        case MinSubnormal: return tr("The smallest nonzero value: a scaled value below half of it flushes to zero.");
        case SpanBinades: return tr("log2(max / min subnormal): how many binades one scale can hold.");
        case MeasuredAmax: return tr("The smallest and largest per-tensor amax over the layers, at the measured step.");
        case MeasuredSmallest:
            return tr("The smallest nonzero magnitude over the layers' tensors (the lens's "
                      "histogram stops at 2^-40).");
        case MeasuredSpan:
            return tr("The most binades one tensor spans, log2(amax / smallest nonzero |x|). Red (formats with "
                      "one scale per tensor): more than the format holds, so its smallest values flush to zero; "
                      "they may be a handful, and the Flushed row says how many. Block formats rescale each "
                      "block; the clipped and flushed rows say what they lose.");
        case ClippedBlocks: return tr("Blocks whose largest value saturated, over every layer and GEMM.");
        case Flushed: return tr("Nonzero values that came back as zero, over every layer and GEMM.");
        case Sqnr: return tr("Signal-to-quantisation-noise ratio over every layer and GEMM; 6 dB is one bit.");
        default: return {};
        }
    }
    return QAbstractTableModel::headerData(section, orientation, role);
}

} // namespace mantissa::ui
