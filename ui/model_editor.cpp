#include "ui/model_editor.h"

#include "engine/optim/parameter_bytes.h"
#include "engine/util/format_number.h"
#include "ui/combo_delegate.h"
#include "ui/config_document.h"
#include "ui/enum_combo.h"
#include "ui/layer_params.h"
#include "ui/layer_table_model.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLocale>
#include <QMenu>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>

namespace mantissa::ui {

namespace {

// A non-breaking space keeps "1.4 MiB" together when the label wraps.
QString unbreakableBytes(double bytes)
{
    return QString::fromStdString(formatBytes(static_cast<std::uint64_t>(bytes))).replace(' ', QChar(0x00A0));
}

} // namespace

ModelEditor::ModelEditor(ConfigDocument* document, QWidget* parent)
    : QWidget(parent), m_document(document), m_model(new LayerTableModel(document, this)), m_view(new QTreeView),
      m_message(new QLabel), m_totals(new QLabel), m_remove(new QToolButton), m_duplicate(new QToolButton),
      m_up(new QToolButton), m_down(new QToolButton)
{
    auto* add = new QToolButton;
    add->setText(tr("Add layer"));
    add->setPopupMode(QToolButton::InstantPopup);
    auto* addMenu = new QMenu(add);
    // The engine's layer kinds, by the names the UI shows, each explained in its tooltip.
    addMenu->setToolTipsVisible(true);
    for (const EnumEntry<LayerKind>& kind : enumEntries<LayerKind>()) {
        QAction* action = addMenu->addAction(fromView(kind.displayName), this, [this, kind] { addLayer(kind.value); });
        action->setToolTip(fromView(kind.description));
    }
    add->setMenu(addMenu);
    m_remove->setText(tr("Remove"));
    m_duplicate->setText(tr("Duplicate"));
    m_up->setText(tr("Move up"));
    m_down->setText(tr("Move down"));
    connect(m_remove, &QToolButton::clicked, this, &ModelEditor::removeLayer);
    connect(m_duplicate, &QToolButton::clicked, this, &ModelEditor::duplicateLayer);
    connect(m_up, &QToolButton::clicked, this, [this] { moveLayer(-1); });
    connect(m_down, &QToolButton::clicked, this, [this] { moveLayer(+1); });

    auto* buttons = new QHBoxLayout;
    for (QToolButton* b : {add, m_remove, m_duplicate, m_up, m_down})
        buttons->addWidget(b);
    buttons->addStretch();

    m_view->setObjectName("layerTable");
    m_view->setModel(m_model);
    m_view->setRootIsDecorated(true);
    m_view->setAllColumnsShowFocus(true);
    m_view->setAlternatingRowColors(true);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                            QAbstractItemView::AnyKeyPressed | QAbstractItemView::SelectedClicked);
    m_view->setItemDelegateForColumn(LayerTableModel::Type, new ComboDelegate(enumKeys<LayerKind>(), this));
    m_view->setItemDelegateForColumn(LayerTableModel::Precision,
                                     new ComboDelegate(LayerTableModel::precisionNames(), this, true));
    // Every column fits its contents (the parameters most of all: "units=1024, activation=relu"
    // elided to "unit..." says nothing); the last one takes what width is left.
    m_view->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_view->header()->setStretchLastSection(true);

    m_message->setObjectName("modelMessage");
    m_message->setWordWrap(true);
    m_message->setStyleSheet("color: #b00020;");
    m_totals->setObjectName("modelTotals");
    m_totals->setWordWrap(true);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(buttons);
    layout->addWidget(m_view, 1);
    layout->addWidget(m_message);
    layout->addWidget(m_totals);

    connect(document, &ConfigDocument::changed, this, &ModelEditor::refresh);
    connect(m_model, &LayerTableModel::editRejected, this, &ModelEditor::showRejection);
    connect(m_view->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &ModelEditor::refresh);
    connect(m_model, &QAbstractItemModel::modelReset, this, [this] {
        // Reset drops the selection model's connection target rows; reconnecting is not needed,
        // but the buttons must reflect the lost selection.
        refresh();
    });
    refresh();
}

QString ModelEditor::messageText() const { return m_message->text(); }

int ModelEditor::currentRow() const { return LayerTableModel::layerRow(m_view->currentIndex()); }

void ModelEditor::selectRow(int row)
{
    if (row >= 0 && row < m_model->rowCount())
        m_view->setCurrentIndex(m_model->index(row, LayerTableModel::Type));
}

void ModelEditor::addLayer(LayerKind type)
{
    RunConfig next = m_document->config();
    auto& layers = next.model.layers;
    // Insert after the selection, or before the classifier, which is usually last.
    const int at = currentRow() >= 0 ? currentRow() + 1 : std::max(0, static_cast<int>(layers.size()) - 1);
    layers.insert(layers.begin() + at, defaultLayer(type));
    m_document->apply(next, tr("Add %1 layer").arg(fromView(enumKey(type))));
    selectRow(at);
}

void ModelEditor::removeLayer()
{
    const int row = currentRow();
    if (row < 0)
        return;
    RunConfig next = m_document->config();
    next.model.layers.erase(next.model.layers.begin() + row);
    m_document->apply(next, tr("Remove layer %1").arg(row));
    selectRow(std::min(row, m_model->rowCount() - 1));
}

void ModelEditor::duplicateLayer()
{
    const int row = currentRow();
    if (row < 0)
        return;
    RunConfig next = m_document->config();
    auto& layers = next.model.layers;
    layers.insert(layers.begin() + row + 1, layers[static_cast<std::size_t>(row)]);
    m_document->apply(next, tr("Duplicate layer %1").arg(row));
    selectRow(row + 1);
}

void ModelEditor::moveLayer(int delta)
{
    const int row = currentRow();
    const int target = row + delta;
    if (row < 0 || target < 0 || target >= m_model->rowCount())
        return;
    RunConfig next = m_document->config();
    std::swap(next.model.layers[static_cast<std::size_t>(row)], next.model.layers[static_cast<std::size_t>(target)]);
    m_document->apply(next, tr("Move layer %1").arg(row));
    selectRow(target);
}

void ModelEditor::showRejection(const QString& message) { m_message->setText(message); }

void ModelEditor::refresh()
{
    const int row = currentRow();
    m_remove->setEnabled(row >= 0);
    m_duplicate->setEnabled(row >= 0);
    m_up->setEnabled(row > 0);
    m_down->setEnabled(row >= 0 && row + 1 < m_model->rowCount());

    const ModelReport& report = m_document->report();
    m_message->setText(QString::fromStdString(report.error));
    if (!report.valid()) {
        m_totals->setText(tr("Totals appear once the model is valid."));
        return;
    }
    const QLocale locale;
    const RunConfig& config = m_document->config();
    const double batch = static_cast<double>(config.training.batchSize);
    const double values = static_cast<double>(report.activationValuesPerSample) * batch;
    // The layers that follow the run's mode; a layer with its own precision may differ.
    const ParameterBytes perParameter = parameterBytes(config);
    m_totals->setText(tr("Parameters: %1   ·   FLOPs/sample: %2\nActivations per batch of %3: %4 in fp32, %5 in fp16"
                         "\nWeights and optimizer state per parameter: %6; %7 in all")
                          .arg(locale.toString(static_cast<qlonglong>(report.totalParameters)),
                               locale.toString(static_cast<qlonglong>(report.totalFlopsPerSample)))
                          .arg(static_cast<qlonglong>(batch))
                          .arg(unbreakableBytes(values * 4), unbreakableBytes(values * 2))
                          .arg(QString::fromStdString(parameterBytesText(perParameter)),
                               unbreakableBytes(static_cast<double>(report.totalParameters) *
                                                static_cast<double>(perParameter.total()))));
}

} // namespace mantissa::ui
