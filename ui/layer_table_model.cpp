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
    : QAbstractItemModel(parent), m_document(document)
{
    for (int row = 0; row < rowCount(); ++row)
        m_partCounts.push_back(partCount(row));
    connect(document, &ConfigDocument::changed, this, &LayerTableModel::onDocumentChanged);
}

QStringList LayerTableModel::precisionNames() { return enumKeys<LayerPrecision>(); }

int LayerTableModel::layerRow(const QModelIndex& index)
{
    if (!index.isValid())
        return -1;
    return index.internalId() == 0 ? index.row() : static_cast<int>(index.internalId()) - 1;
}

int LayerTableModel::partCount(int row) const
{
    const ModelReport& report = m_document->report();
    if (row < 0 || row >= static_cast<int>(report.layers.size()))
        return 0;
    return static_cast<int>(report.layers[static_cast<std::size_t>(row)].parts.size());
}

QModelIndex LayerTableModel::index(int row, int column, const QModelIndex& parent) const
{
    if (!hasIndex(row, column, parent))
        return {};
    // A layer's internal id is 0; a part's is its layer's row + 1.
    return parent.isValid() ? createIndex(row, column, static_cast<quintptr>(parent.row()) + 1)
                            : createIndex(row, column, quintptr{0});
}

QModelIndex LayerTableModel::parent(const QModelIndex& child) const
{
    if (!child.isValid() || child.internalId() == 0)
        return {};
    return createIndex(static_cast<int>(child.internalId()) - 1, 0, quintptr{0});
}

int LayerTableModel::rowCount(const QModelIndex& parent) const
{
    if (!parent.isValid())
        return static_cast<int>(m_document->config().model.layers.size());
    // Parts hang off a layer's first column only, and have none of their own.
    if (parent.internalId() != 0 || parent.column() != 0)
        return 0;
    return parent.row() < static_cast<int>(m_partCounts.size()) ? m_partCounts[static_cast<std::size_t>(parent.row())]
                                                                : 0;
}

int LayerTableModel::columnCount(const QModelIndex&) const { return ColumnCount; }

QVariant LayerTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (role != Qt::DisplayRole || orientation != Qt::Horizontal)
        return {};
    switch (section) {
    case Index: return tr("#"); // the validator's messages number layers from 0
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
    if (index.internalId() == 0 && (index.column() == Type || index.column() == Params || index.column() == Precision))
        f |= Qt::ItemIsEditable;
    // A block's part takes its format from model.precision_overrides, by its full name.
    if (index.internalId() != 0 && index.column() == Precision)
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
    if (role == Qt::TextAlignmentRole &&
        (index.column() == ParamCount || index.column() == Flops || index.column() == Index))
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (index.internalId() == 0)
        return layerData(index.row(), index.column(), role);
    return partData(static_cast<int>(index.internalId()) - 1, index.row(), index.column(), role);
}

QVariant LayerTableModel::layerData(int row, int column, int role) const
{
    const LayerSpec& layer = m_document->config().model.layers[static_cast<std::size_t>(row)];
    const ModelReport& report = m_document->report();
    const LayerReport* info =
        row < static_cast<int>(report.layers.size()) ? &report.layers[static_cast<std::size_t>(row)] : nullptr;
    const bool known = info && info->error.empty() && info->outputShape.rank() > 0;

    if (role == Qt::BackgroundRole && report.errorLayer == row)
        return QBrush(QColor(255, 215, 215));
    if (role == Qt::ToolTipRole && info && !info->error.empty())
        return QString::fromStdString(info->error);
    if (role == Qt::ToolTipRole && column == Type && known && !info->parts.empty())
        return partsText(*info);
    if (column == TensorCores && (role == Qt::DisplayRole || role == Qt::ToolTipRole))
        return known ? tensorCoreData(row, role) : QVariant();
    if (role != Qt::DisplayRole && role != Qt::EditRole)
        return {};

    const QLocale locale;
    switch (column) {
    case Index: return row;
    case Type: return fromView(enumKey(layer.type));
    case Params: return formatLayerParams(layer);
    case OutputShape:
        return known ? shapeText(info->outputShape) : (info && !info->error.empty() ? tr("error") : QString());
    case ParamCount: return known ? locale.toString(static_cast<qlonglong>(info->parameters)) : QString();
    case Flops: return known ? locale.toString(static_cast<qlonglong>(info->flopsPerSample)) : QString();
    case Precision: return QString::fromStdString(layerFormatText(layer.precision));
    default: return {};
    }
}

QVariant LayerTableModel::partData(int layer, int part, int column, int role) const
{
    const ModelReport& report = m_document->report();
    if (layer >= static_cast<int>(report.layers.size()) ||
        part >= static_cast<int>(report.layers[static_cast<std::size_t>(layer)].parts.size()))
        return {};
    const LayerPartReport& info = report.layers[static_cast<std::size_t>(layer)].parts[static_cast<std::size_t>(part)];
    const LayerSpec& block = m_document->config().model.layers[static_cast<std::size_t>(layer)];
    // A residual block's parts are its body's layers, then the shortcut's projection if it has one.
    const LayerSpec* spec = block.type == LayerKind::Residual && part < static_cast<int>(block.body.size())
                                ? &block.body[static_cast<std::size_t>(part)]
                                : nullptr;
    const bool projection = block.type == LayerKind::Residual && !spec;
    // The part's entry in model.precision_overrides, by its name or a pattern matching it.
    const RunConfig& config = m_document->config();
    std::optional<LayerFormat> stated;
    QString ambiguity;
    try {
        stated = PrecisionPolicy(config.precision, config.recipe, config.update, config.model.precisionOverrides)
                     .overrideFor(info.name);
    } catch (const ConfigError& e) {
        ambiguity = QString::fromLocal8Bit(e.what());
    }
    if (column == Precision && role == Qt::ToolTipRole)
        return ambiguity.isEmpty() ? tr("%1's format: its entry in model.precision_overrides (auto follows the block)")
                                         .arg(QString::fromStdString(info.name))
                                   : ambiguity;
    if (role == Qt::ForegroundRole)
        return column == Precision && stated ? QVariant() : QVariant(QBrush(QColor(90, 90, 90)));
    if (role == Qt::ToolTipRole)
        return tr("Part of layer %1 (%2); edit the block in its own row").arg(layer).arg(fromView(enumKey(block.type)));
    if (role != Qt::DisplayRole && role != Qt::EditRole)
        return {};
    const QLocale locale;
    switch (column) {
    case Index: return QStringLiteral("%1.%2").arg(layer).arg(part);
    case Type: return fromView(enumKey(info.type));
    case Params: return spec ? formatLayerParams(*spec) : projection ? tr("shortcut projection") : QString();
    case ParamCount: return locale.toString(static_cast<qlonglong>(info.parameters));
    case Flops: return locale.toString(static_cast<qlonglong>(info.flopsPerSample));
    case Precision:
        return QString::fromStdString(layerFormatText(stated ? *stated : spec ? spec->precision : LayerFormat()));
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
    const QString text = value.toString().trimmed();
    if (index.internalId() != 0)
        return setPartFormat(index, text);
    LayerSpec& layer = next.model.layers[static_cast<std::size_t>(index.row())];
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
        if (const std::string error = parseLayerFormat(text.toStdString(), layer.precision); !error.empty()) {
            emit editRejected(tr("layer %1 precision %2").arg(index.row()).arg(QString::fromStdString(error)));
            return false;
        }
        what = tr("precision");
        break;
    }
    default: return false;
    }
    m_document->apply(next, tr("Edit layer %1 %2").arg(index.row()).arg(what),
                      QString("layer/%1/%2").arg(index.row()).arg(index.column()));
    return true;
}

bool LayerTableModel::setPartFormat(const QModelIndex& index, const QString& text)
{
    const auto layer = static_cast<std::size_t>(index.internalId() - 1);
    const ModelReport& report = m_document->report();
    if (layer >= report.layers.size() || index.row() >= static_cast<int>(report.layers[layer].parts.size()))
        return false;
    const std::string& name = report.layers[layer].parts[static_cast<std::size_t>(index.row())].name;
    LayerFormat format;
    if (const std::string error = parseLayerFormat(text.toStdString(), format); !error.empty()) {
        emit editRejected(tr("%1 precision %2").arg(QString::fromStdString(name), QString::fromStdString(error)));
        return false;
    }
    RunConfig next = m_document->config();
    if (format.isAuto())
        next.model.precisionOverrides.erase(name);
    else
        next.model.precisionOverrides[name] = format;
    m_document->apply(next, tr("Edit %1 precision").arg(QString::fromStdString(name)),
                      QString("part/%1/precision").arg(QString::fromStdString(name)));
    return true;
}

void LayerTableModel::onDocumentChanged(bool restructured)
{
    std::vector<int> partCounts;
    for (int row = 0; row < rowCount(); ++row)
        partCounts.push_back(partCount(row));
    if (restructured || partCounts != m_partCounts) {
        beginResetModel();
        m_partCounts = std::move(partCounts);
        endResetModel();
        return;
    }
    // Shapes, counts and validity of every later row (and its parts) may change with one edit.
    if (rowCount() == 0)
        return;
    emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
    for (int row = 0; row < rowCount(); ++row) {
        const QModelIndex layer = index(row, 0);
        if (const int parts = rowCount(layer); parts > 0)
            emit dataChanged(index(0, 0, layer), index(parts - 1, ColumnCount - 1, layer));
    }
}

} // namespace mantissa::ui
