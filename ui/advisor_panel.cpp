#include "ui/advisor_panel.h"

#include "engine/util/enum_table.h"
#include "report/advice_text.h"
#include "report/report_writer.h"
#include "storage/latest_state.h"
#include "storage/run_store.h"
#include "storage/stored_config.h"
#include "ui/advisor_job.h"
#include "ui/config_document.h"
#include "ui/enum_combo.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QDateTime>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

namespace mantissa::ui {

namespace {

QString q(const std::string& text) { return QString::fromStdString(text); }

QTableWidgetItem* cell(const QString& text, bool right = true)
{
    auto* item = new QTableWidgetItem(text);
    item->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
    if (right)
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

} // namespace

AdvisorPanel::AdvisorPanel(ConfigDocument* document, QWidget* parent) : QWidget(parent), m_document(document)
{
    setObjectName("advisorPanel");
    setWindowTitle(tr("Advise precision"));

    // The lower formats: the engine's format table (auto, which means "the config's own", excepted).
    m_formats = new QListWidget;
    m_formats->setObjectName("advisorFormats");
    for (const EnumEntry<LayerPrecision>& entry : enumEntries<LayerPrecision>()) {
        if (entry.value == LayerPrecision::Auto)
            continue;
        auto* item = new QListWidgetItem(fromView(entry.displayName), m_formats);
        item->setData(Qt::UserRole, fromView(entry.key));
        item->setToolTip(fromView(entry.description));
        item->setFlags(Qt::ItemIsUserCheckable | Qt::ItemIsEnabled);
        item->setCheckState(Qt::Unchecked);
    }
    m_formats->setMaximumHeight(120);
    m_budget = new QDoubleSpinBox;
    m_budget->setObjectName("advisorBudget");
    m_budget->setDecimals(5);
    m_budget->setRange(-1e3, 1e3);
    m_budget->setSingleStep(0.001);
    m_budget->setValue(0.01);
    m_budget->setToolTip(tr("The largest total held-out loss increase accepted (the layers' probe increases add up)"));
    m_objective = new QComboBox;
    m_objective->setObjectName("advisorObjective");
    m_objective->addItem(tr("FLOPs"), QStringLiteral("flops"));
    m_objective->addItem(tr("weights' memory"), QStringLiteral("memory"));
    m_scoreOnly = new QCheckBox(tr("score only (probe 3 layers per format, estimate the others)"));
    m_scoreOnly->setToolTip(tr("Estimate each layer's held-out loss increase from its score (the gradients and its "
                               "weights' rounding: one pass whatever the layer count), scaled into loss units by "
                               "probing 3 layers per format; the loss budget is then spent in those estimates"));
    m_trainFirst = new QCheckBox(tr("train the config first (else probe its initial weights)"));
    m_trainFirst->setChecked(true);
    m_heldOut = new QSpinBox;
    m_heldOut->setRange(1, 1000);
    m_heldOut->setValue(4);
    m_heldOut->setToolTip(tr("Batches of the validation (else test) split the loss is measured on"));

    m_source = new QLabel;
    m_source->setObjectName("advisorSource");
    m_source->setWordWrap(true);
    m_useCurrent = new QPushButton(tr("Use the current config"));
    m_useCurrent->setObjectName("advisorUseCurrentConfig");
    m_useCurrent->setToolTip(tr("Advise on the workbench's current config instead of the stored run"));
    connect(m_useCurrent, &QPushButton::clicked, this, &AdvisorPanel::adviseCurrentConfig);
    auto* source = new QHBoxLayout;
    source->addWidget(m_source, 1);
    source->addWidget(m_useCurrent);

    auto* form = new QFormLayout;
    form->addRow(tr("Lower formats:"), m_formats);
    form->addRow(tr("Loss budget:"), m_budget);
    form->addRow(tr("Objective:"), m_objective);
    form->addRow(tr("Held-out batches:"), m_heldOut);
    form->addRow(m_trainFirst);
    form->addRow(m_scoreOnly);

    m_advise = new QPushButton(tr("Advise"));
    m_cancel = new QPushButton(tr("Cancel"));
    m_apply = new QPushButton(tr("Apply to config"));
    m_apply->setToolTip(tr("Set the chosen formats in model.precision_overrides (one undo step)"));
    m_export = new QPushButton(tr("Export report…"));
    m_export->setObjectName("advisorExportReport");
    m_export->setToolTip(tr("The advice as a PDF, HTML or Markdown report: the per-layer sensitivity chart, the "
                            "table and the share of FLOPs in each format"));
    connect(m_export, &QPushButton::clicked, this, &AdvisorPanel::chooseReportFile);
    connect(m_advise, &QPushButton::clicked, this, &AdvisorPanel::startAdvice);
    connect(m_cancel, &QPushButton::clicked, this, &AdvisorPanel::cancel);
    connect(m_apply, &QPushButton::clicked, this, &AdvisorPanel::applyAdvice);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_advise);
    buttons->addWidget(m_cancel);
    buttons->addStretch();
    buttons->addWidget(m_export);
    buttons->addWidget(m_apply);

    m_progress = new QProgressBar;
    m_progress->setRange(0, 1);
    m_progress->setValue(0);
    m_status = new QLabel;
    m_error = new QLabel;
    m_error->setObjectName("advisorError");
    m_error->setWordWrap(true);
    m_error->setStyleSheet("color: #b00020;");
    m_error->hide();
    m_table = new QTableWidget;
    m_table->setObjectName("advisorTable");
    m_table->verticalHeader()->hide();
    m_summary = new QLabel;
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_verify = new QLabel;
    m_verify->setWordWrap(true);
    m_verify->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(source);
    layout->addLayout(form);
    layout->addLayout(buttons);
    layout->addWidget(m_progress);
    layout->addWidget(m_status);
    layout->addWidget(m_error);
    layout->addWidget(m_table, 1);
    layout->addWidget(m_summary);
    layout->addWidget(m_verify);
    showSource();
    updateButtons();
}

AdvisorPanel::~AdvisorPanel() = default;

bool AdvisorPanel::adviseStoredRun(const storage::RunStore& store, qint64 runId)
{
    if (isRunning()) {
        showError(tr("An advice is running: cancel it or let it end before choosing another run."));
        return false;
    }
    StoredRunSource source;
    try {
        // The path `mantissa-cli advise RUN` takes: the run's stored config, its latest state.
        const storage::RunInfo run = store.run(runId);
        const storage::LatestState state = storage::latestState(store, run);
        source.config = storage::storedRunConfig(store, run);
        source.checkpoint = state.path.toStdString();
        source.runId = run.id;
        source.description = state.description;
    } catch (const std::exception& e) {
        showError(tr("Cannot advise on run %1: %2").arg(runId).arg(QString::fromLocal8Bit(e.what())));
        return false;
    }
    m_storedRun = std::move(source);
    showError({});
    showSource();
    return true;
}

void AdvisorPanel::adviseCurrentConfig()
{
    if (isRunning())
        return;
    m_storedRun.reset();
    showError({});
    showSource();
}

void AdvisorPanel::clearAdvice()
{
    m_advice.reset();
    m_table->clear();
    m_table->setRowCount(0);
    m_table->setColumnCount(0);
    m_summary->clear();
    m_verify->clear();
    updateButtons();
}

void AdvisorPanel::showSource()
{
    // An advice applies to what it was measured on: a new source starts without one.
    clearAdvice();
    if (m_storedRun)
        m_source->setText(tr("Advising on <b>%1</b>: its config (%2, %3) at its latest saved state, probed as it "
                             "is (no training).")
                              .arg(m_storedRun->description.toHtmlEscaped(),
                                   QString::fromStdString(m_storedRun->config.name).toHtmlEscaped(),
                                   QString::fromStdString(precisionModeName(m_storedRun->config.precision))));
    else
        m_source->setText(tr("Advising on the workbench's current config."));
    m_useCurrent->setVisible(m_storedRun.has_value());
    m_trainFirst->setEnabled(!m_storedRun);
    m_trainFirst->setToolTip(m_storedRun ? tr("A stored run is probed at its own saved state") : QString());
}

bool AdvisorPanel::isRunning() const { return m_job && m_job->isRunning(); }

std::vector<LayerPrecision> AdvisorPanel::checkedFormats() const
{
    std::vector<LayerPrecision> formats;
    for (int i = 0; i < m_formats->count(); ++i)
        if (m_formats->item(i)->checkState() == Qt::Checked)
            formats.push_back(
                *parseEnum<LayerPrecision>(m_formats->item(i)->data(Qt::UserRole).toString().toStdString()));
    return formats;
}

void AdvisorPanel::showError(const QString& message)
{
    m_error->setText(message);
    m_error->setVisible(!message.isEmpty());
}

bool AdvisorPanel::startAdvice()
{
    if (isRunning())
        return false;
    showError({});
    AdvisorJobSettings settings;
    settings.config = m_storedRun ? m_storedRun->config : m_document->config();
    settings.request.formats = checkedFormats();
    if (settings.request.formats.empty()) {
        showError(tr("Choose one lower format or more to advise on."));
        return false;
    }
    if (const QString blocker = m_document->runBlocker(); !m_storedRun && !blocker.isEmpty()) {
        showError(tr("The config cannot run: %1").arg(blocker));
        return false;
    }
    settings.request.budget = m_budget->value();
    settings.request.objective =
        parseAdvisorObjective(m_objective->currentData().toString().toStdString()).value_or(AdvisorObjective::Flops);
    settings.request.scoreOnly = m_scoreOnly->isChecked();
    settings.probe.heldOutBatches = m_heldOut->value();
    settings.trainFirst = !m_storedRun && m_trainFirst->isChecked();
    if (m_storedRun)
        settings.checkpoint = m_storedRun->checkpoint;
    clearAdvice();
    m_job = std::make_unique<AdvisorJob>(std::move(settings));
    connect(m_job.get(), &AdvisorJob::progress, this, &AdvisorPanel::onProgress);
    connect(m_job.get(), &AdvisorJob::finished, this, &AdvisorPanel::onJobFinished);
    m_progress->setRange(0, 0); // busy until the first probe says how many there are
    m_status->setText(tr("starting"));
    emit jobStarting(m_job.get());
    m_job->start();
    updateButtons();
    return true;
}

void AdvisorPanel::cancel()
{
    if (!isRunning())
        return;
    m_job->cancel();
    m_status->setText(tr("cancelling: the probe under way finishes first"));
    m_cancel->setEnabled(false);
}

void AdvisorPanel::onProgress(int index, int total, const QString& text)
{
    if (total > 0) {
        m_progress->setRange(0, total);
        m_progress->setValue(index);
    } else {
        m_progress->setRange(0, 0);
    }
    m_status->setText(text);
}

void AdvisorPanel::onJobFinished()
{
    m_progress->setRange(0, 1);
    if (m_job->result()) {
        m_advice = m_job->result();
        m_progress->setValue(1);
        m_status->setText(tr("done"));
        showAdvice(*m_advice);
    } else if (!m_job->error().isEmpty()) {
        m_progress->setValue(0);
        m_status->setText(tr("failed"));
        showError(m_job->error());
    } else {
        m_progress->setValue(0);
        m_status->setText(tr("cancelled: nothing to apply"));
    }
    updateButtons();
    emit finished();
}

void AdvisorPanel::showAdvice(const AdviceTable& table)
{
    // The command's table and sentences (report/advice_text.h), so that the panel, the command
    // and the report say the same.
    const report::AdviceText text = report::adviceText(table);
    m_table->setColumnCount(static_cast<int>(text.header.size()));
    m_table->setHorizontalHeaderLabels(text.header);
    m_table->setRowCount(static_cast<int>(text.rows.size()));
    for (qsizetype row = 0; row < text.rows.size(); ++row)
        for (qsizetype column = 0; column < text.rows[row].size(); ++column) {
            QTableWidgetItem* item = cell(text.rows[row][column], text.rightAligned.value(column));
            if (text.rows[row][column] == QLatin1String("does not fit"))
                item->setToolTip(tr("%1 cannot take this format").arg(text.rows[row].front()));
            m_table->setItem(int(row), int(column), item);
        }
    m_table->resizeColumnsToContents();

    QStringList shares;
    for (const QStringList& share : text.shares)
        shares << tr("%1: %2 of FLOPs (%3 of weights)").arg(share[0], share[1], share[2]);
    QStringList lines{tr("Share per format — %1").arg(shares.join("; "))};
    lines << text.scoreScales;
    if (table.assignment.withinBudget)
        lines << text.budget;
    lines << text.correlations;
    m_summary->setText(lines.join("\n"));

    QStringList problems;
    if (!table.assignment.withinBudget)
        problems << text.budget;
    problems << text.misfits;
    showError(problems.join("\n"));
    m_verify->setText(m_storedRun ? tr("To verify the advice over seeds (trains it, the baseline and the rules of "
                                       "thumb), run:\n%1")
                                        .arg(verifyCommand())
                                  : tr("To verify the advice over seeds (trains it, the baseline and the rules of "
                                       "thumb), save the config and run:\n%1")
                                        .arg(verifyCommand()));
}

QStringList AdvisorPanel::exportReport(const QString& path)
{
    if (!m_advice || isRunning())
        return {};
    const std::optional<report::ReportFormat> format = report::reportFormatForPath(path);
    if (!format || *format == report::ReportFormat::Csv) {
        showError(tr("%1: an advice's report is a .pdf, .html or .md file").arg(path));
        return {};
    }
    const RunConfig& config = m_storedRun ? m_storedRun->config : m_job->settings().config;
    const QString subject = m_storedRun ? tr("%1 (%2)").arg(q(config.name), m_storedRun->description)
                                        : tr("%1 (%2)").arg(q(config.name), m_job->settings().trainFirst
                                                                                ? tr("the config trained here first")
                                                                                : tr("the model's initial weights"));
    report::ReportData data;
    data.machine = report::localMachineInfo();
    data.generatedAt = QDateTime::currentDateTimeUtc();
    data.mantissaVersion = QCoreApplication::applicationVersion();
    data.advice = report::adviceSummary(*m_advice, subject, q(runConfigToJson(advisedConfig(config, *m_advice))));
    try {
        const QStringList files = report::writeReport(data, path, *format);
        m_status->setText(tr("wrote %1").arg(files.join(", ")));
        return files;
    } catch (const std::exception& e) {
        showError(tr("Could not write the report: %1").arg(QString::fromUtf8(e.what())));
        return {};
    }
}

void AdvisorPanel::chooseReportFile()
{
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Export the advice as a report"), q(m_advice ? "advice.pdf" : ""),
                                     tr("PDF (*.pdf);;HTML (*.html);;Markdown (*.md)"));
    if (!path.isEmpty())
        exportReport(path);
}

QString AdvisorPanel::verifyCommand() const
{
    QStringList formats;
    for (LayerPrecision f : m_advice->formats)
        formats << fromView(enumKey(f));
    const QString source = m_storedRun ? QString::number(m_storedRun->runId) : QStringLiteral("CONFIG.json");
    QString command = QStringLiteral("mantissa-cli advise %1 --format %2 --budget %3")
                          .arg(source, formats.join(","), QString::number(m_advice->budget, 'g', 6));
    if (m_job && m_job->settings().request.objective == AdvisorObjective::Memory)
        command += " --objective memory";
    if (m_advice->scoreOnly)
        command += " --score-only";
    return command + " --verify 5";
}

bool AdvisorPanel::applyAdvice()
{
    if (!m_advice || isRunning())
        return false;
    if (m_storedRun) {
        // The run's config with the formats becomes the current config: what to train next.
        m_document->apply(advisedConfig(m_storedRun->config, *m_advice),
                          tr("Apply the advice on %1").arg(m_storedRun->description));
        m_status->setText(tr("the config of %1 with the advised formats is now the current config (Undo takes it "
                             "back)")
                              .arg(m_storedRun->description));
        return true;
    }
    m_document->apply(advisedConfig(m_document->config(), *m_advice), tr("Apply the advised per-layer formats"));
    m_status->setText(tr("applied to model.precision_overrides (Undo removes them)"));
    return true;
}

void AdvisorPanel::updateButtons()
{
    const bool running = isRunning();
    m_advise->setEnabled(!running);
    m_cancel->setEnabled(running);
    m_apply->setEnabled(!running && m_advice.has_value());
    m_export->setEnabled(!running && m_advice.has_value());
    m_useCurrent->setEnabled(!running);
}

} // namespace mantissa::ui
