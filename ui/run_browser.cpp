#include "ui/run_browser.h"

#include "engine/config/run_config.h"
#include "engine/train/text_sampler.h"
#include "storage/run_store.h"
#include "ui/report_export.h"
#include "ui/run_list_model.h"
#include "ui/sampling_dialog.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include <memory>

namespace mantissa::ui {

RunBrowser::RunBrowser(QWidget* parent)
    : QWidget(parent), m_model(new RunListModel(this)), m_proxy(new QSortFilterProxyModel(this)), m_where(new QLabel),
      m_filter(new QLineEdit), m_view(new QTableView)
{
    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(RunListModel::SortRole);
    m_proxy->setFilterKeyColumn(-1); // a filter matches name, preset, precision, status, tags or notes
    m_proxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
    m_filter->setObjectName("runFilter");
    m_filter->setPlaceholderText(tr("Filter runs (name, preset, precision, status, tag, notes)"));
    m_filter->setClearButtonEnabled(true);
    connect(m_filter, &QLineEdit::textChanged, m_proxy, &QSortFilterProxyModel::setFilterFixedString);

    m_view->setObjectName("runTable");
    m_view->setModel(m_proxy);
    m_view->setSortingEnabled(true);
    m_view->sortByColumn(RunListModel::Created, Qt::DescendingOrder);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_view->setEditTriggers(QAbstractItemView::EditKeyPressed | QAbstractItemView::SelectedClicked);
    m_view->verticalHeader()->hide();
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_view->horizontalHeader()->setStretchLastSection(true);
    connect(m_view, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
        if (index.column() != RunListModel::Name)
            emit openRequested(m_proxy->data(index, RunListModel::RunIdRole).toLongLong());
    });
    connect(m_view->selectionModel(), &QItemSelectionModel::selectionChanged, this, &RunBrowser::updateButtons);
    connect(m_model, &RunListModel::storeError, this, &RunBrowser::storeError);
    connect(m_model, &QAbstractItemModel::modelReset, this, &RunBrowser::updateButtons);

    m_open = new QPushButton(tr("Open"));
    m_compare = new QPushButton(tr("Compare selected"));
    m_rename = new QPushButton(tr("Rename"));
    m_notes = new QPushButton(tr("Notes…"));
    m_tags = new QPushButton(tr("Tags…"));
    m_delete = new QPushButton(tr("Delete"));
    m_initFrom = new QPushButton(tr("Start from its weights"));
    m_initFrom->setObjectName("startFromWeights");
    m_initFrom->setToolTip(tr("The next run, in any precision, starts from this run's last checkpoint "
                              "(fine-tuning an fp32 run in mixed fp16, say)"));
    connect(m_initFrom, &QPushButton::clicked, this, [this] {
        const QList<qint64> ids = selectedRunIds();
        if (ids.size() == 1)
            emit initFromRequested(ids.first());
    });
    m_advise = new QPushButton(tr("Advise…"));
    m_advise->setObjectName("adviseRun");
    connect(m_advise, &QPushButton::clicked, this, [this] {
        const QList<qint64> ids = selectedRunIds();
        if (ids.size() == 1)
            emit adviseRequested(ids.first());
    });
    m_sample = new QPushButton(tr("Sample text…"));
    m_sample->setObjectName("sampleText");
    connect(m_sample, &QPushButton::clicked, this, &RunBrowser::openSamplingDialog);
    m_checkpoints = new QLabel;
    m_checkpoints->setObjectName("runCheckpoints");
    m_checkpoints->setWordWrap(true);
    m_checkpoints->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_report = new QPushButton(tr("Export report…"));
    m_report->setToolTip(tr("A PDF, HTML, Markdown or CSV report of the selected runs; the first is the baseline"));
    m_export = new ReportExport(this);
    connect(m_report, &QPushButton::clicked, this, &RunBrowser::exportWithDialog);
    connect(m_export, &ReportExport::finished, this, &RunBrowser::updateButtons);
    connect(m_export, &ReportExport::failed, this, [this](const QString& message) {
        updateButtons();
        emit storeError(tr("The report could not be written: %1").arg(message));
    });
    auto* refresh = new QPushButton(tr("Refresh"));
    connect(m_open, &QPushButton::clicked, this, [this] {
        const QList<qint64> ids = selectedRunIds();
        if (!ids.isEmpty())
            emit openRequested(ids.first());
    });
    connect(m_compare, &QPushButton::clicked, this, [this] { emit compareRequested(selectedRunIds()); });
    connect(m_rename, &QPushButton::clicked, this, [this] {
        const QModelIndex current = m_view->currentIndex();
        if (current.isValid())
            m_view->edit(m_proxy->index(current.row(), RunListModel::Name));
    });
    connect(m_notes, &QPushButton::clicked, this, &RunBrowser::editNotes);
    connect(m_tags, &QPushButton::clicked, this, &RunBrowser::editTags);
    connect(m_delete, &QPushButton::clicked, this, &RunBrowser::deleteSelected);
    connect(refresh, &QPushButton::clicked, this, &RunBrowser::reload);

    auto* top = new QHBoxLayout;
    top->addWidget(m_filter, 1);
    top->addWidget(refresh);
    auto* buttons = new QHBoxLayout;
    for (QPushButton* b :
         {m_open, m_compare, m_rename, m_notes, m_tags, m_delete, m_report, m_initFrom, m_advise, m_sample})
        buttons->addWidget(b);
    m_view->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_view, &QWidget::customContextMenuRequested, this, [this](const QPoint& at) {
        if (selectedRunIds().size() != 1)
            return;
        const std::unique_ptr<QMenu> menu(makeContextMenu());
        menu->exec(m_view->viewport()->mapToGlobal(at));
    });
    buttons->addStretch();
    m_where->setObjectName("databasePath");
    m_where->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_where->setStyleSheet("color: palette(mid);");

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(m_view, 1);
    layout->addWidget(m_checkpoints);
    layout->addLayout(buttons);
    layout->addWidget(m_where);
    setStore(nullptr);
}

void RunBrowser::setStore(storage::RunStore* store)
{
    m_model->setStore(store);
    m_store = store;
    m_databasePath = store ? store->path() : QString();
    m_where->setText(store ? tr("Database: %1").arg(store->path())
                           : tr("No run database is open: runs are not recorded."));
    updateButtons();
}

void RunBrowser::reload()
{
    const QList<qint64> selected = selectedRunIds();
    m_model->reload();
    selectRuns(selected);
}

QList<qint64> RunBrowser::selectedRunIds() const
{
    QList<qint64> ids;
    for (const QModelIndex& index : m_view->selectionModel()->selectedRows())
        ids << m_proxy->data(index, RunListModel::RunIdRole).toLongLong();
    return ids;
}

void RunBrowser::selectRuns(const QList<qint64>& ids)
{
    QItemSelection selection;
    for (qint64 id : ids) {
        const int row = m_model->rowOfRun(id);
        if (row < 0)
            continue;
        const QModelIndex proxyIndex = m_proxy->mapFromSource(m_model->index(row, 0));
        if (proxyIndex.isValid())
            selection.select(proxyIndex, proxyIndex.siblingAtColumn(RunListModel::ColumnCount - 1));
    }
    m_view->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect);
    updateButtons();
}

int RunBrowser::currentSourceRow() const
{
    const QModelIndexList rows = m_view->selectionModel()->selectedRows();
    return rows.isEmpty() ? -1 : m_proxy->mapToSource(rows.first()).row();
}

void RunBrowser::updateButtons()
{
    const int selected = static_cast<int>(m_view->selectionModel()->selectedRows().size());
    m_open->setEnabled(selected == 1);
    m_compare->setEnabled(selected >= 2);
    m_compare->setToolTip(selected >= 2 ? QString() : tr("Select two or more runs (Ctrl+click)"));
    for (QPushButton* b : {m_rename, m_notes, m_tags})
        b->setEnabled(selected == 1);
    m_delete->setEnabled(selected >= 1);
    m_report->setEnabled(selected >= 1 && !m_export->isBusy());
    const QList<qint64> ids = selectedRunIds();
    const bool hasCheckpoint = showCheckpoints(ids);
    m_initFrom->setEnabled(hasCheckpoint);
    m_advise->setEnabled(hasCheckpoint);
    m_advise->setToolTip(hasCheckpoint ? tr("Which layers of this run can go to a lower format: the precision "
                                            "advisor probes its latest checkpoint")
                         : ids.size() == 1
                             ? tr("This run has no checkpoint to probe (runs save one when they finish or are "
                                  "stopped, not when they diverge or fail)")
                             : tr("Select one finished or stopped run"));
    const QString whyNot = hasCheckpoint ? whyNotSampleable(ids) : tr("Select one finished or stopped run");
    m_sample->setEnabled(whyNot.isEmpty());
    m_sample->setToolTip(whyNot.isEmpty() ? tr("Generate text from this language model's latest checkpoint") : whyNot);
}

QString RunBrowser::whyNotSampleable(const QList<qint64>& selected) const
{
    if (!m_store || selected.size() != 1)
        return tr("Select one run");
    try {
        const storage::RunInfo run = m_store->run(selected.first());
        const RunConfig config = parseRunConfig(run.configJson.toStdString(), "run " + std::to_string(run.id));
        const std::string why = whyNotByteLanguageModel(config.model);
        return why.empty() ? QString()
                           : tr("Not a byte-level language model: %1 (train one on text, such as the char-gpt "
                                "preset)")
                                 .arg(QString::fromStdString(why));
    } catch (const std::exception& e) {
        return QString::fromLocal8Bit(e.what());
    }
}

SamplingDialog* RunBrowser::openSamplingDialog()
{
    const QList<qint64> ids = selectedRunIds();
    if (!m_store || ids.size() != 1 || !whyNotSampleable(ids).isEmpty())
        return nullptr;
    try {
        const storage::RunInfo run = m_store->run(ids.first());
        const QList<storage::CheckpointInfo> checkpoints = m_store->checkpoints(run.id);
        if (checkpoints.isEmpty())
            return nullptr;
        const storage::CheckpointInfo& latest = checkpoints.last(); // ordered by step
        const RunConfig config = parseRunConfig(run.configJson.toStdString(), "run " + std::to_string(run.id));
        auto* dialog = new SamplingDialog(
            config, latest.absolutePath,
            tr("run %1 (%2, %3), step %4").arg(run.id).arg(run.name, run.precision).arg(latest.step), this);
        dialog->setAttribute(Qt::WA_DeleteOnClose);
        dialog->show();
        return dialog;
    } catch (const std::exception& e) {
        emit storeError(QString::fromLocal8Bit(e.what()));
        return nullptr;
    }
}

QMenu* RunBrowser::makeContextMenu()
{
    auto* menu = new QMenu(this);
    for (QPushButton* b : {m_open, m_advise, m_initFrom, m_sample}) {
        QAction* action = menu->addAction(b->text(), b, &QPushButton::click);
        action->setEnabled(b->isEnabled());
        action->setToolTip(b->toolTip());
        action->setObjectName(b->objectName());
    }
    menu->setToolTipsVisible(true);
    return menu;
}

bool RunBrowser::showCheckpoints(const QList<qint64>& selected)
{
    m_checkpoints->clear();
    m_checkpoints->setToolTip({});
    if (!m_store || selected.size() != 1)
        return false;
    QList<storage::CheckpointInfo> checkpoints;
    QString name;
    try {
        name = m_store->run(selected.first()).name;
        checkpoints = m_store->checkpoints(selected.first());
    } catch (const std::exception& e) {
        emit storeError(QString::fromLocal8Bit(e.what()));
        return false;
    }
    if (checkpoints.isEmpty()) {
        m_checkpoints->setText(tr("%1 has no checkpoint (runs save one when they finish or are stopped).").arg(name));
        return false;
    }
    QStringList saved, paths;
    for (const storage::CheckpointInfo& c : checkpoints) {
        saved << tr("epoch %1 (step %2)").arg(c.epoch).arg(c.step);
        paths << c.absolutePath;
    }
    m_checkpoints->setText(tr("Checkpoints of %1: %2").arg(name, saved.join(QStringLiteral(", "))));
    m_checkpoints->setToolTip(paths.join(u'\n'));
    return true;
}

bool RunBrowser::exportReport(const QString& path)
{
    QString error;
    if (m_databasePath.isEmpty()) {
        emit storeError(tr("No run database is open."));
        return false;
    }
    if (!m_export->start(m_databasePath, selectedRunIds(), path, &error)) {
        emit storeError(error);
        return false;
    }
    updateButtons();
    return true;
}

void RunBrowser::exportWithDialog()
{
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export report"), QString(),
        tr("PDF (*.pdf);;HTML, one file (*.html);;Markdown with PNG plots (*.md);;CSV rows (*.csv)"));
    if (!path.isEmpty())
        exportReport(path);
}

void RunBrowser::editNotes()
{
    const int row = currentSourceRow();
    if (row < 0)
        return;
    bool ok = false;
    const QString notes = QInputDialog::getMultiLineText(
        this, tr("Notes"), tr("Notes on %1:").arg(m_model->run(row).name), m_model->run(row).notes, &ok);
    if (ok)
        m_model->setNotes(row, notes);
}

void RunBrowser::editTags()
{
    const int row = currentSourceRow();
    if (row < 0)
        return;
    bool ok = false;
    const QString text =
        QInputDialog::getText(this, tr("Tags"), tr("Tags of %1, separated by commas:").arg(m_model->run(row).name),
                              QLineEdit::Normal, m_model->run(row).tags.join(", "), &ok);
    if (!ok)
        return;
    QStringList tags;
    for (const QString& tag : text.split(',', Qt::SkipEmptyParts))
        if (!tag.trimmed().isEmpty())
            tags << tag.trimmed();
    m_model->setTags(row, tags);
}

void RunBrowser::deleteSelected()
{
    const QList<qint64> ids = selectedRunIds();
    if (ids.isEmpty())
        return;
    const auto answer = QMessageBox::question(this, tr("Delete runs"),
                                              tr("Delete %n run(s) with their steps, epochs, events and checkpoints? "
                                                 "This cannot be undone.",
                                                 nullptr, static_cast<int>(ids.size())));
    if (answer != QMessageBox::Yes)
        return;
    for (qint64 id : ids)
        m_model->deleteRun(m_model->rowOfRun(id));
}

} // namespace mantissa::ui
