// The Workbench's sweeps: "Compare precisions" with seeds: N > 1 (over its chosen precisions), any sweep (the sweep editor),
// their progress in the status bar, and a sweep's comparison in the Comparison tab.
#include "ui/workbench.h"

#include "storage/run_store.h"
#include "sweep/sweep_import.h"
#include "ui/config_document.h"
#include "ui/error_banner.h"
#include "ui/run_browser.h"
#include "ui/run_controller.h"
#include "ui/run_status_bar.h"
#include "ui/studies_dialog.h"
#include "ui/sweep_comparison_view.h"
#include "ui/sweep_controller.h"
#include "ui/sweep_editor.h"

#include <QFileDialog>

#include <QStackedWidget>
#include <QTabWidget>

#include <nlohmann/json.hpp>

namespace mantissa::ui {

void Workbench::connectSweeps()
{
    connect(m_sweeps, &SweepController::started, this, [this](qint64 sweepId, int runsToDo, bool resumed) {
        m_banner->hide();
        m_status->showMessage(resumed ? tr("Sweep %1 resumed: %2 runs left to train").arg(sweepId).arg(runsToDo)
                                      : tr("Sweep %1: training %2 runs").arg(sweepId).arg(runsToDo));
        m_status->showSweepProgress(0, runsToDo, tr("starting workers"));
    });
    connect(m_sweeps, &SweepController::progressChanged, this, [this](const sweep::SweepProgress& progress) {
        m_status->showSweepProgress(progress.done, progress.total, progress.text());
    });
    // The run browser lists each run as it ends; the database already holds it.
    connect(m_sweeps, &SweepController::runEnded, m_browser, &RunBrowser::reload);
    connect(m_sweeps, &SweepController::finished, this, [this](qint64 sweepId, const sweep::SweepProgress& progress) {
        m_status->hideProgress();
        m_status->showMessage(
            tr("Sweep %1 ended: %2 finished, %3 diverged, %4 failed, %5 interrupted%6")
                .arg(sweepId)
                .arg(progress.finished)
                .arg(progress.diverged)
                .arg(progress.failed)
                .arg(progress.interrupted)
                .arg(progress.notStarted > 0 ? tr(", %1 not started").arg(progress.notStarted) : QString()));
        m_browser->reload();
        showSweep(sweepId);
        updateActions();
        emit sweepFinished(sweepId);
    });
}

void Workbench::stopTraining()
{
    if (m_sweeps->isRunning()) {
        m_sweeps->stop();
        m_status->showMessage(tr("Stopping the sweep: its running runs stop at the next step"));
    } else {
        m_controller->stop();
    }
}

bool Workbench::startPrecisionSweep(const QList<PrecisionMode>& modes, int seeds)
{
    try {
        return startSweep(precisionComparisonSpec(m_document->config(),
                                                  std::vector<PrecisionMode>(modes.begin(), modes.end()), seeds));
    } catch (const std::exception& e) {
        m_banner->showError(tr("Cannot compare over seeds"), QString::fromLocal8Bit(e.what()));
        return false;
    }
}

bool Workbench::startSweep(const SweepSpec& spec)
{
    if (m_controller->isRunning() || m_sweeps->isRunning()) {
        m_status->showMessage(tr("A run is in progress"));
        return false;
    }
    if (!m_store) {
        m_banner->showError(tr("Cannot run a sweep"),
                            tr("A sweep records its runs in a run database, and none is open (see --db)."));
        return false;
    }
    QString error;
    if (!m_sweeps->start(*m_store, spec, m_sweepJobs, &error)) {
        m_banner->showError(tr("Cannot run the sweep %1").arg(QString::fromStdString(spec.name)), error);
        return false;
    }
    updateActions();
    return true;
}

void Workbench::editSweepWithDialog()
{
    SweepEditor editor(m_document->config(), this);
    QStringList compared; // the precisions Compare precisions would train
    for (PrecisionMode mode : m_precisionSet->modes(m_document->config().precision))
        compared << QString::fromStdString(precisionModeName(mode));
    editor.addAxis(SweepEditor::AxisKind::Precisions, compared.join(", "));
    if (editor.exec() != QDialog::Accepted || !editor.spec())
        return;
    m_sweepJobs = editor.jobs();
    startSweep(*editor.spec());
    m_sweepJobs = 0;
}

void Workbench::importWithDialog()
{
    const QString path = QFileDialog::getExistingDirectory(this, tr("Import a sweep directory"));
    if (!path.isEmpty())
        importSweepDirectory(path);
}

bool Workbench::importSweepDirectory(const QString& path, QString* summary)
{
    if (!m_store) {
        m_banner->showError(tr("Cannot import"), tr("Imported runs go into a run database, and none is open."));
        return false;
    }
    sweep::ImportSummary imported;
    try {
        imported = sweep::importDatabases(*m_store, {path});
    } catch (const std::exception& e) {
        m_banner->showError(tr("Cannot import %1").arg(path), QString::fromLocal8Bit(e.what()));
        return false;
    }
    QStringList skipped;
    for (const sweep::FileImport& file : imported.files)
        if (!file.skipped.isEmpty())
            skipped << file.skipped;
    if (!skipped.isEmpty())
        m_banner->showError(tr("%n file(s) skipped", nullptr, int(skipped.size())), skipped.join('\n'));
    m_status->showMessage(imported.text(), 15000);
    if (summary)
        *summary = imported.text();
    m_browser->reload();
    // A Slurm directory holds one sweep: the newest with runs is the one just imported (or, on
    // a second import, merged before).
    if (imported.total.imported + imported.total.alreadyPresent > 0)
        for (const storage::SweepInfo& info : m_store->sweeps())
            if (!m_store->sweepRuns(info.id).isEmpty())
                return showSweep(info.id);
    return true;
}

bool Workbench::showSweep(qint64 sweepId)
{
    if (!m_store)
        return false;
    try {
        SweepComparison comparison = loadSweepComparison(*m_store, sweepId);
        if (const QList<storage::RunInfo> runs = m_store->sweepRuns(sweepId); !runs.isEmpty())
            showStoredConfig(runs.front().id);
        showSweepComparison(std::move(comparison));
    } catch (const std::exception& e) {
        m_banner->showError(tr("Cannot show sweep %1").arg(sweepId), QString::fromLocal8Bit(e.what()));
        return false;
    }
    return true;
}

StudiesDialog* Workbench::openStudies(const QString& name)
{
    auto* dialog = new StudiesDialog(m_store.get(), this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &StudiesDialog::showSweepRequested, this, [this](qint64 sweepId) { showSweep(sweepId); });
    if (!name.isEmpty() && !dialog->selectStudy(name))
        m_status->showMessage(tr("No study named %1").arg(name));
    dialog->show();
    return dialog;
}

void Workbench::showSweepComparison(SweepComparison comparison)
{
    m_sweepView->setComparison(std::move(comparison));
    m_comparisonStack->setCurrentWidget(m_sweepView);
    m_rightTabs->setCurrentWidget(m_comparisonStack);
}

} // namespace mantissa::ui
