#include "ui/layer_table_model.h"

#include "engine/model/tensor_core_alignment.h"
#include "ui/config_document.h"
#include "ui/enum_combo.h"
#include "ui/layer_params.h"

#include <QBrush>
#include <QColor>
#include <QLocale>

namespace mantissa::ui {

namespace {

QString shapeText(const Shape& shape)
{
    QStringList dims;
    for (auto d : shape.dims())
        dims << QString::number(d);
    return dims.join(QStringLiteral(" × "));
}

} // namespace

LayerTableModel::LayerTableModel(ConfigDocument* document, QObject* parent)
    : QAbstractTableModel(parent), m_document(document)
{
    connect(document, &ConfigDocument::changed, this, &LayerTableModel::onDocumentChanged);
}

QStringList LayerTableModel::precisionNames() { return enumKeys<LayerPrecision>(); }

int LayerTableModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_document->config().model.layers.size());
}

int LayerTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant LayerTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (role != Qt::DisplayRole)
        return {};
    if (orientation == Qt::Vertical)
        return section; // the validator's messages number layers from 0
    switch (section) {
    case Type: return tr("Type");
    case Params: return tr("Parameters");
    case OutputShape: return tr("Output shape");
    case ParamCount: return tr("Weights");
    case Flops: return tr("FLOPs/sample");
    case Precision: return tr("Precision");
    case TensorCores: return tr("Tensor cores");
    default: return {};
    }
}

Qt::ItemFlags LayerTableModel::flags(const QModelIndex& index) const
{
    if (!index.isValid())
        return Qt::NoItemFlags;
    Qt::ItemFlags f = Qt::ItemIsSelectable | Qt::ItemIsEnabled;
    if (index.column() == Type || index.column() == Params || index.column() == Precision)
        f |= Qt::ItemIsEditable;
    return f;
}

namespace {
QString partsText(const LayerReport& info)
{
    const QLocale locale;
    QStringList lines;
    for (const LayerPartReport& part : info.parts)
        lines << LayerTableModel::tr("%1: %2 weights, %3 FLOPs/sample")
                     .arg(fromView(enumKey(part.type)), locale.toString(static_cast<qlonglong>(part.parameters)),
                          locale.toString(static_cast<qlonglong>(part.flopsPerSample)));
    return lines.join(u'\n');
}
} // namespace

QVariant LayerTableModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const int row = index.row();
    const LayerSpec& layer = m_document->config().model.layers[static_cast<std::size_t>(row)];
    const ModelReport& report = m_document->report();
    const LayerReport* info =
        row < static_cast<int>(report.layers.size()) ? &report.layers[static_cast<std::size_t>(row)] : nullptr;
    const bool known = info && info->error.empty() && info->outputShape.rank() > 0;

    if (role == Qt::BackgroundRole && report.errorLayer == row)
        return QBrush(QColor(255, 215, 215));
    if (role == Qt::ToolTipRole && info && !info->error.empty())
        return QString::fromStdString(info->error);
    // A composite layer (a transformer block) is one row; its tooltip opens it up into its parts.
    if (role == Qt::ToolTipRole && index.column() == Type && known && !info->parts.empty())
        return partsText(*info);
    if (index.column() == TensorCores && (role == Qt::DisplayRole || role == Qt::ToolTipRole))
        return known ? tensorCoreData(row, role) : QVariant();
    if (role == Qt::TextAlignmentRole && (index.column() == ParamCount || index.column() == Flops))
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role != Qt::DisplayRole && role != Qt::EditRole)
        return {};

    const QLocale locale;
    switch (index.column()) {
    case Type: return fromView(enumKey(layer.type));
    case Params: return formatLayerParams(layer);
    case OutputShape:
        return known ? shapeText(info->outputShape) : (info && !info->error.empty() ? tr("error") : QString());
    case ParamCount: return known ? locale.toString(static_cast<qlonglong>(info->parameters)) : QString();
    case Flops: return known ? locale.toString(static_cast<qlonglong>(info->flopsPerSample)) : QString();
    case Precision: return fromView(enumKey(layer.precision));
    default: return {};
    }
}

QVariant LayerTableModel::tensorCoreData(int row, int role) const
{
    // The engine's verdict (model/tensor_core_alignment), for the dtype the layer computes in.
    const LayerSpec& layer = m_document->config().model.layers[static_cast<std::size_t>(row)];
    const LayerAlignment alignment =
        layerAlignment(m_document->report().layers[static_cast<std::size_t>(row)],
                       PrecisionPolicy(m_document->config().precision).layer(layer.precision).compute());
    return fromView(role == Qt::ToolTipRole ? alignment.reason() : alignment.verdictText());
}

bool LayerTableModel::setData(const QModelIndex& index, const QVariant& value, int role)
{
    if (role != Qt::EditRole || !checkIndex(index, CheckIndexOption::IndexIsValid) ||
        !(flags(index) & Qt::ItemIsEditable))
        return false;
    RunConfig next = m_document->config();
    LayerSpec& layer = next.model.layers[static_cast<std::size_t>(index.row())];
    const QString text = value.toString().trimmed();
    QString what;
    switch (index.column()) {
    case Type: {
        const auto type = parseEnum<LayerKind>(text.toStdString());
        if (!type) {
            emit editRejected(
                tr("\"%1\" is not a layer type; choose one of %2").arg(text, enumKeys<LayerKind>().join(", ")));
            return false;
        }
        if (layer.type == *type)
            return true;
        LayerSpec replacement = defaultLayer(*type);
        replacement.precision = layer.precision;
        layer = replacement;
        what = tr("type");
        break;
    }
    case Params: {
        const QString error = parseLayerParams(text, layer);
        if (!error.isEmpty()) {
            emit editRejected(tr("layer %1 (%2): %3").arg(index.row()).arg(fromView(enumKey(layer.type)), error));
            return false;
        }
        what = tr("parameters");
        break;
    }
    case Precision: {
        const auto precision = parseEnum<LayerPrecision>(text.toStdString());
        if (!precision) {
            emit editRejected(tr("precision must be one of %1").arg(precisionNames().join(", ")));
            return false;
        }
        layer.precision = *precision;
        what = tr("precision");
        break;
    }
    default: return false;
    }
    m_document->apply(next, tr("Edit layer %1 %2").arg(index.row()).arg(what),
                      QString("layer/%1/%2").arg(index.row()).arg(index.column()));
    return true;
}

void LayerTableModel::onDocumentChanged(bool restructured)
{
    if (restructured) {
        beginResetModel();
        endResetModel();
        return;
    }
    // Shapes, counts and validity of every later row may change with one edit.
    if (rowCount() > 0)
        emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
}

} // namespace mantissa::ui
