#include "ui/advisor_panel.h"

#include "engine/util/enum_table.h"
#include "engine/util/format_number.h"
#include "storage/latest_state.h"
#include "storage/run_store.h"
#include "storage/stored_config.h"
#include "ui/advisor_job.h"
#include "ui/config_document.h"
#include "ui/enum_combo.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
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

QString signedNumber(double v)
{
    if (!std::isfinite(v))
        return QStringLiteral("nan");
    return (v > 0 ? QStringLiteral("+") : QString()) + QString::number(v, 'g', 4);
}

QString number(double v) { return std::isfinite(v) ? QString::number(v, 'g', 3) : QStringLiteral("nan"); }

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
    connect(m_advise, &QPushButton::clicked, this, &AdvisorPanel::startAdvice);
    connect(m_cancel, &QPushButton::clicked, this, &AdvisorPanel::cancel);
    connect(m_apply, &QPushButton::clicked, this, &AdvisorPanel::applyAdvice);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_advise);
    buttons->addWidget(m_cancel);
    buttons->addStretch();
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
    const bool several = table.formats.size() > 1;
    QStringList headers{tr("layer"), tr("FLOPs")};
    for (LayerPrecision f : table.formats) {
        const QString suffix = several ? " " + fromView(enumKey(f)) : QString();
        if (!table.scoreOnly)
            headers << tr("probe Δloss") + suffix;
        headers << tr("score") + suffix;
        headers << (table.scoreOnly ? tr("est. Δloss") : tr("shadow rel. err")) + suffix;
    }
    headers << tr("chosen");
    m_table->setColumnCount(static_cast<int>(headers.size()));
    m_table->setHorizontalHeaderLabels(headers);
    m_table->setRowCount(static_cast<int>(table.layers.size()));
    for (std::size_t l = 0; l < table.layers.size(); ++l) {
        const int row = static_cast<int>(l);
        int column = 0;
        m_table->setItem(row, column++, cell(q(table.layers[l].name), false));
        m_table->setItem(row, column++, cell(q(formatSi(static_cast<double>(table.layers[l].flops)))));
        for (std::size_t f = 0; f < table.formats.size(); ++f) {
            const std::string& misfit = table.misfits[l][f];
            if (!table.scoreOnly) {
                QTableWidgetItem* item =
                    cell(misfit.empty() ? signedNumber(table.probes[l][f].lossIncrease) : tr("does not fit"));
                item->setToolTip(q(misfit));
                m_table->setItem(row, column++, item);
            }
            m_table->setItem(row, column++, cell(misfit.empty() ? number(table.scores[l][f]) : QStringLiteral("-")));
            if (table.scoreOnly)
                m_table->setItem(row, column++,
                                 cell(!misfit.empty()        ? QStringLiteral("-")
                                      : table.measured(l, f) ? signedNumber(table.costs[l][f]) + tr(" (probe)")
                                                             : signedNumber(table.costs[l][f])));
            else
                m_table->setItem(
                    row, column++,
                    cell(misfit.empty() ? number(table.probes[l][f].outputRelativeError) : QStringLiteral("-")));
        }
        const std::string chosen = chosenFormat(table, l);
        m_table->setItem(row, column,
                         cell(chosen.empty() ? q(table.baselineLabel) + tr(" (baseline)") : q(chosen), false));
    }
    m_table->resizeColumnsToContents();

    QStringList lines;
    QStringList shares;
    for (const FormatShare& share : formatShares(table))
        shares << tr("%1: %2% of FLOPs (%3% of weights)")
                      .arg(share.format.empty() ? q(table.baselineLabel) + tr(" (baseline)") : q(share.format))
                      .arg(100 * share.flops, 0, 'f', 1)
                      .arg(100 * share.weights, 0, 'f', 1);
    lines << tr("Share per format — %1").arg(shares.join("; "));
    if (table.scoreOnly)
        for (std::size_t f = 0; f < table.formats.size(); ++f)
            lines << q(scoreScaleSentence(table, f));
    const QString what = table.scoreOnly ? tr("estimated") : tr("probe");
    const QString model =
        table.scoreOnly ? tr("each estimated from its score, or measured where probed") : tr("each measured alone");
    if (table.assignment.withinBudget)
        lines << tr("Loss budget %1: the chosen layers' %2 loss increases add up to %3 (%4; baseline held-out loss "
                    "%5).")
                     .arg(number(table.budget), what, signedNumber(table.assignment.lossIncrease), model)
                     .arg(table.baselineLoss, 0, 'g', 5);
    for (std::size_t f = 0; f < table.rankCorrelations.size(); ++f) {
        const std::optional<double>& r = table.rankCorrelations[f];
        lines << tr("Rank correlation of score and probe in %1 (Spearman): %2")
                     .arg(fromView(enumKey(table.formats[f])),
                          r ? QString::number(*r, 'f', 3) : tr("undefined (fewer than 2 layers, or no spread)"));
    }
    m_summary->setText(lines.join("\n"));

    QStringList problems;
    if (!table.assignment.withinBudget)
        problems << tr("No assignment meets the loss budget %1: the least total %2 loss increase found is %3, with "
                       "the layers above.")
                        .arg(number(table.budget), what, signedNumber(table.assignment.lossIncrease));
    for (std::size_t l = 0; l < table.layers.size(); ++l)
        for (std::size_t f = 0; f < table.formats.size(); ++f)
            if (!table.misfits[l][f].empty())
                problems << tr("%1 cannot take %2: %3")
                                .arg(q(table.layers[l].name), fromView(enumKey(table.formats[f])),
                                     q(table.misfits[l][f]));
    showError(problems.join("\n"));
    m_verify->setText(m_storedRun ? tr("To verify the advice over seeds (trains it, the baseline and the rules of "
                                       "thumb), run:\n%1")
                                        .arg(verifyCommand())
                                  : tr("To verify the advice over seeds (trains it, the baseline and the rules of "
                                       "thumb), save the config and run:\n%1")
                                        .arg(verifyCommand()));
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
    m_useCurrent->setEnabled(!running);
}

} // namespace mantissa::ui
