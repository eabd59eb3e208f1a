#include "ui/model_file_view.h"

#include "engine/model/model_file.h"
#include "engine/util/format_number.h"
#include "ui/combo_delegate.h"
#include "ui/config_document.h"
#include "ui/layer_table_model.h"

#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

namespace mantissa::ui {

namespace {

QString text(const std::string& value) { return QString::fromStdString(value); }

QString shapeText(const std::vector<std::int64_t>& dims)
{
    QStringList parts;
    for (std::int64_t d : dims)
        parts << QString::number(d);
    return parts.join(u'x');
}

QTableWidgetItem* cell(const QString& value, Qt::Alignment alignment = Qt::AlignLeft | Qt::AlignVCenter)
{
    auto* item = new QTableWidgetItem(value);
    item->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
    item->setTextAlignment(alignment);
    return item;
}

} // namespace

ModelFileView::ModelFileView(ConfigDocument* document, QWidget* parent)
    : QWidget(parent), m_document(document), m_summary(new QLabel), m_table(new QTableWidget), m_problem(new QLabel)
{
    setObjectName("modelFileView");
    m_summary->setObjectName("modelFileSummary");
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_problem->setObjectName("modelFileProblem");
    m_problem->setWordWrap(true);
    m_problem->setStyleSheet(QStringLiteral("color: #b00020;"));
    m_problem->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_table->setColumnCount(ColumnCount);
    m_table->setHorizontalHeaderLabels({tr("#"), tr("Node"), tr("Op"), tr("Output shape"), tr("Parameters"),
                                        tr("FLOPs/sample"), tr("Trains"), tr("Format"), tr("Runs in")});
    m_table->horizontalHeaderItem(OutputShape)->setToolTip(tr("Per sample, without the batch"));
    m_table->horizontalHeaderItem(Precision)->setToolTip(
        tr("The dtype the node computes in under the current precision mode; under a recipe, whether "
           "it quantises the node's GEMM"));
    m_table->horizontalHeaderItem(Format)->setToolTip(
        tr("The node's own format (model.precision_overrides): a compute type or a recipe for its GEMM's "
           "inputs, weights and gradients, or inputs=F, weights=F, gradients=F; auto follows the run's mode. "
           "Double-click to change it."));
    m_table->horizontalHeaderItem(Trains)->setToolTip(
        tr("Whether Mantissa imports this node and compiles its operator into its training engine"));
    m_table->verticalHeader()->hide();
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
    m_table->setItemDelegateForColumn(Format, new ComboDelegate(LayerTableModel::precisionNames(), this, true));
    connect(m_table, &QTableWidget::itemChanged, this, &ModelFileView::formatEdited);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setStretchLastSection(true);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_summary);
    layout->addWidget(m_table, 1);
    layout->addWidget(m_problem);
    connect(m_document, &ConfigDocument::changed, this, &ModelFileView::refresh);
    refresh();
}

QString ModelFileView::summaryText() const { return m_summary->text(); }

QString ModelFileView::problemText() const { return m_problem->text(); }

void ModelFileView::refresh()
{
    const RunConfig& config = m_document->config();
    if (config.model.onnx.empty()) {
        m_shown.reset();
        m_table->setRowCount(0);
        m_summary->clear();
        m_problem->clear();
        return;
    }
    // Compiling the model for the precision column takes a moment: only when what it shows changed.
    if (m_shown && m_shown->model.onnx == config.model.onnx && m_shown->model.input == config.model.input &&
        m_shown->model.classes == config.model.classes && m_shown->precision == config.precision &&
        m_shown->recipe == config.recipe && m_shown->overrides == config.model.precisionOverrides)
        return;
    m_shown = Shown{config.model, config.precision, config.recipe, config.model.precisionOverrides};
    m_filling = true;
    const struct Filled {
        bool& filling;
        ~Filled() { filling = false; }
    } filled{m_filling};
    ModelFileDescription model;
    try {
        model = describeModelFile(config);
    } catch (const std::exception& e) {
        m_table->setRowCount(0);
        m_summary->setText(tr("ONNX model %1").arg(text(config.model.onnx)));
        m_problem->setText(QString::fromLocal8Bit(e.what()));
        return;
    }
    m_summary->setText(tr("ONNX model <b>%1</b> (%2)<br>input %3 per sample, %4 classes; %5 nodes, %6 parameters, "
                          "%7 FLOPs per sample (forward); precision %8")
                           .arg(QFileInfo(text(model.path)).fileName().toHtmlEscaped(),
                                text(model.path).toHtmlEscaped(), shapeText(config.model.input))
                           .arg(config.model.classes)
                           .arg(model.nodes.size())
                           .arg(model.parameters)
                           .arg(text(formatSi(model.flopsPerSample)), text(precisionModeName(config.precision))));
    m_problem->setText(text(model.problem));
    m_table->setRowCount(static_cast<int>(model.nodes.size()));
    const Qt::Alignment right = Qt::AlignRight | Qt::AlignVCenter;
    for (int row = 0; row < m_table->rowCount(); ++row) {
        const ModelFileNode& node = model.nodes[static_cast<std::size_t>(row)];
        m_table->setItem(row, Index, cell(QString::number(row + 1), right));
        m_table->setItem(row, Node, cell(text(node.name)));
        m_table->setItem(row, Op, cell(text(node.opType)));
        m_table->setItem(row, OutputShape, cell(text(node.outputShape)));
        m_table->setItem(row, Parameters, cell(node.parameters ? QString::number(node.parameters) : QString(), right));
        m_table->setItem(row, Flops,
                         cell(node.flopsPerSample > 0 ? text(formatSi(node.flopsPerSample)) : QString(), right));
        m_table->setItem(row, Precision, cell(text(node.precision)));
        const auto stated = config.model.precisionOverrides.find(node.name);
        QTableWidgetItem* format = cell(
            text(layerFormatText(stated == config.model.precisionOverrides.end() ? LayerFormat() : stated->second)));
        if (node.supported)
            format->setFlags(format->flags() | Qt::ItemIsEditable);
        m_table->setItem(row, Format, format);
        QTableWidgetItem* trains = cell(node.supported ? tr("yes") : tr("NO"));
        if (!node.supported) {
            trains->setForeground(QColor(0xb0, 0x00, 0x20));
            trains->setToolTip(tr("Mantissa cannot train this node's operator yet"));
        }
        m_table->setItem(row, Trains, trains);
    }
}

void ModelFileView::formatEdited(QTableWidgetItem* item)
{
    if (m_filling || item->column() != Format)
        return;
    const QTableWidgetItem* nodeItem = m_table->item(item->row(), Node);
    if (!nodeItem)
        return;
    const std::string name = nodeItem->text().toStdString();
    LayerFormat format;
    if (const std::string error = parseLayerFormat(item->text().trimmed().toStdString(), format); !error.empty()) {
        m_problem->setText(tr("%1 format %2").arg(nodeItem->text(), text(error)));
        m_shown.reset(); // the cell goes back to the stored format
        refresh();
        return;
    }
    RunConfig next = m_document->config();
    if (format.isAuto())
        next.model.precisionOverrides.erase(name);
    else
        next.model.precisionOverrides[name] = format;
    if (next.model.precisionOverrides == m_document->config().model.precisionOverrides)
        return;
    m_document->apply(next, tr("Edit %1 format").arg(nodeItem->text()));
}

} // namespace mantissa::ui
