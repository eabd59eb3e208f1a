#include "ui/workbench_widget.h"

#include "engine/config/presets.h"
#include "engine/config/run_config.h"
#include "engine/util/check.h"
#include "storage/run_store.h"
#include "ui/config_document.h"
#include "ui/error_banner.h"
#include "ui/record_buffer.h"
#include "ui/report_export.h"
#include "ui/run_browser.h"
#include "ui/run_controller.h"
#include "ui/run_recording.h"
#include "ui/sweep_controller.h"
#include "ui/workbench.h"

#include <QAction>
#include <QSettings>
#include <QToolBar>
#include <QUndoStack>
#include <QVBoxLayout>

namespace mantissa {

// The facade over ui::Workbench: it translates the controller's record batches into the
// public signals and the banner's errors into `error` strings, so that no private type
// crosses the public header.
struct WorkbenchWidget::Private {
    WorkbenchWidget* q;
    ui::Workbench* workbench;
    WorkbenchRun current;
    qint64 totalSteps = 0;
    QString lastError; // the banner's latest, for calls that report failure only there

    void onRecords(const ui::RecordBatch& batch);
    void onRunEnded(const RunSummary& summary, const QString& failure);
    // Runs `call`; on false, `error` gets what it showed in the banner (or `fallback`).
    template <typename Call>
    bool reportingErrors(QString* error, const QString& fallback, Call call);
};

void WorkbenchWidget::Private::onRecords(const ui::RecordBatch& batch)
{
    if (batch.started) {
        current.runId = batch.started->runId;
        if (!batch.started->runName.isEmpty())
            current.name = batch.started->runName;
        totalSteps = batch.started->totalSteps;
        emit q->runStarted(current);
    }
    if (!batch.steps.empty()) {
        const StepRecord& last = batch.steps.back();
        emit q->stepsRecorded(current.runId, last.step, totalSteps, last.loss);
    }
    for (const EventRecord& event : batch.events) {
        if (event.kind == EventKind::Overflow)
            emit q->overflowed(current.runId, event.step, event.scaleBefore, event.scaleAfter,
                               QString::fromStdString(event.parameter));
    }
}

void WorkbenchWidget::Private::onRunEnded(const RunSummary& summary, const QString& failure)
{
    if (summary.status == RunStatus::Failed) {
        emit q->runFailed(current, failure.isEmpty() ? QString::fromStdString(summary.message) : failure);
        return;
    }
    WorkbenchRunResult result;
    result.run = current;
    result.status = summary.status;
    result.message = QString::fromStdString(summary.message);
    result.steps = summary.steps;
    result.skippedSteps = summary.skippedSteps;
    result.epochs = summary.epochs;
    result.testAccuracy = summary.testAccuracy;
    emit q->runFinished(result);
}

template <typename Call>
bool WorkbenchWidget::Private::reportingErrors(QString* error, const QString& fallback, Call call)
{
    lastError.clear();
    if (call())
        return true;
    if (error)
        *error = lastError.isEmpty() ? fallback : lastError;
    return false;
}

WorkbenchWidget::WorkbenchWidget(QWidget* parent) : QWidget(parent), d(std::make_unique<Private>())
{
    d->q = this;
    d->workbench = new ui::Workbench;
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(d->workbench);

    connect(d->workbench->banner(), &ui::ErrorBanner::shown, this,
            [this](const QString& title, const QString& message) {
                d->lastError = QStringLiteral("%1: %2").arg(title, message);
                emit errorReported(title, message);
            });
    ui::RunController* controller = d->workbench->controller();
    // Connected after the Workbench's own slots, so a run's row is complete by runFinished.
    connect(controller, &ui::RunController::runStarted, this, [this](int, const RunConfig& config) {
        d->current = {0, ui::recordingName(config), QString::fromStdString(precisionModeName(config.precision))};
        d->totalSteps = 0;
    });
    connect(controller, &ui::RunController::recordsArrived, this,
            [this](const ui::RecordBatch& batch) { d->onRecords(batch); });
    connect(controller, &ui::RunController::runEnded, this,
            [this](int, const RunSummary& summary, const QString& failure) { d->onRunEnded(summary, failure); });
    connect(controller, &ui::RunController::sequenceEnded, this, &WorkbenchWidget::runsFinished);
    ui::ReportExport* report = d->workbench->runBrowser()->reportExport();
    connect(report, &ui::ReportExport::finished, this, &WorkbenchWidget::reportExported);
    connect(report, &ui::ReportExport::failed, this, &WorkbenchWidget::reportFailed);
}

WorkbenchWidget::~WorkbenchWidget() = default;

QStringList WorkbenchWidget::presetNames() const { return d->workbench->presetNames(); }

bool WorkbenchWidget::addPreset(const QString& name, const QString& json, QString* error)
{
    const auto fail = [error](const QString& why) {
        if (error)
            *error = why;
        return false;
    };
    if (name.trimmed().isEmpty())
        return fail(tr("A preset needs a name"));
    for (const std::string& builtIn : mantissa::presetNames()) {
        if (name == QString::fromStdString(builtIn))
            return fail(tr("\"%1\" is a built-in preset; give the host's preset another name").arg(name));
    }
    try {
        d->workbench->addPreset(name, parseRunConfig(json.toStdString(), "preset " + name.toStdString()));
    } catch (const Error& e) {
        return fail(QString::fromStdString(e.what()));
    }
    return true;
}

bool WorkbenchWidget::loadPreset(const QString& name, QString* error)
{
    return d->reportingErrors(error, tr("No preset named \"%1\"").arg(name),
                              [&] { return d->workbench->loadPreset(name); });
}

bool WorkbenchWidget::openConfig(const QString& path, QString* error) { return d->workbench->openConfig(path, error); }

bool WorkbenchWidget::saveConfig(const QString& path, QString* error) { return d->workbench->saveConfig(path, error); }

QString WorkbenchWidget::configJson() const
{
    return QString::fromStdString(runConfigToJson(d->workbench->document()->config()));
}

bool WorkbenchWidget::setConfigJson(const QString& json, QString* error)
{
    try {
        d->workbench->document()->load(parseRunConfig(json.toStdString(), "the host's config"), tr("Set config"));
    } catch (const Error& e) {
        if (error)
            *error = QString::fromStdString(e.what());
        return false;
    }
    return true;
}

bool WorkbenchWidget::startRun(QString* error)
{
    const QString blocker = d->workbench->document()->runBlocker();
    QString why = isRunning()         ? tr("A run is in progress")
                  : blocker.isEmpty() ? QString()
                                      : tr("Cannot run: %1").arg(blocker);
    if (why.isEmpty() && d->workbench->startRun())
        return true;
    if (error)
        *error = why.isEmpty() ? tr("The run could not start") : why;
    return false;
}

bool WorkbenchWidget::startComparison(QString* error)
{
    const QString blocker = d->workbench->document()->runBlocker();
    QString why = isRunning()         ? tr("A run is in progress")
                  : blocker.isEmpty() ? QString()
                                      : tr("Cannot run: %1").arg(blocker);
    if (why.isEmpty() && d->workbench->startComparison())
        return true;
    if (error)
        *error = why.isEmpty() ? tr("The comparison could not start") : why;
    return false;
}

bool WorkbenchWidget::setPaused(bool paused)
{
    QAction* pause = d->workbench->pauseAction();
    if (!pause->isEnabled())
        return false;
    pause->setChecked(paused); // the action's handler pauses the controller and relabels it
    return true;
}

void WorkbenchWidget::stopRun()
{
    if (d->workbench->stopAction()->isEnabled())
        d->workbench->stopAction()->trigger();
}

bool WorkbenchWidget::isRunning() const
{
    return d->workbench->controller()->isRunning() || d->workbench->sweeps()->isRunning();
}

bool WorkbenchWidget::isPaused() const { return d->workbench->controller()->isPaused(); }

bool WorkbenchWidget::setDatabasePath(const QString& path, QString* error)
{
    return d->workbench->setDatabasePath(path, error);
}

QString WorkbenchWidget::databasePath() const { return d->workbench->databasePath(); }

QList<StoredRunInfo> WorkbenchWidget::storedRuns(QString* error) const
{
    QList<StoredRunInfo> runs;
    storage::RunStore* store = d->workbench->store();
    if (!store) {
        if (error)
            *error = tr("No run database is set (setDatabasePath)");
        return runs;
    }
    try {
        for (const storage::RunInfo& info : store->listRuns())
            runs << StoredRunInfo{info.id, info.name, info.preset, info.precision, info.status, info.createdAt};
    } catch (const std::exception& e) {
        if (error)
            *error = QString::fromLocal8Bit(e.what());
    }
    return runs;
}

bool WorkbenchWidget::openStoredRun(qint64 runId, QString* error)
{
    const QString fallback = d->workbench->store() ? tr("Run %1 could not be opened").arg(runId)
                                                   : tr("No run database is set (setDatabasePath)");
    return d->reportingErrors(error, fallback, [&] { return d->workbench->openStoredRun(runId); });
}

bool WorkbenchWidget::compareStoredRuns(const QList<qint64>& runIds, QString* error)
{
    const QString fallback = !d->workbench->store() ? tr("No run database is set (setDatabasePath)")
                             : runIds.size() < 2    ? tr("A comparison needs two runs or more")
                                                    : tr("These runs could not be compared");
    return d->reportingErrors(error, fallback, [&] { return d->workbench->compareStoredRuns(runIds); });
}

bool WorkbenchWidget::exportReport(const QList<qint64>& runIds, const QString& path, QString* error)
{
    ui::ReportExport* report = d->workbench->runBrowser()->reportExport();
    QString why;
    if (databasePath().isEmpty())
        why = tr("No run database is set (setDatabasePath)");
    else if (runIds.isEmpty())
        why = tr("A report needs at least one run");
    else if (report->isBusy())
        why = tr("A report is being written; wait for it to finish");
    if (why.isEmpty())
        return report->start(databasePath(), runIds, path, error);
    if (error)
        *error = why;
    return false;
}

QAction* WorkbenchWidget::action(Action which) const
{
    switch (which) {
    case Action::Run: return d->workbench->runAction();
    case Action::Pause: return d->workbench->pauseAction();
    case Action::Stop: return d->workbench->stopAction();
    case Action::ComparePrecisions: return d->workbench->compareAction();
    case Action::Open: return d->workbench->openAction();
    case Action::Save: return d->workbench->saveAction();
    case Action::Undo: return d->workbench->undoAction();
    case Action::Redo: return d->workbench->redoAction();
    }
    return nullptr;
}

QMenu* WorkbenchWidget::presetsMenu() const { return d->workbench->presetsMenu(); }

void WorkbenchWidget::setToolBarVisible(bool visible) { d->workbench->toolBar()->setVisible(visible); }

void WorkbenchWidget::saveSettings(QSettings& settings) const
{
    settings.setValue("layout", d->workbench->saveLayout());
    settings.setValue("config", configJson());
}

void WorkbenchWidget::restoreSettings(const QSettings& settings)
{
    d->workbench->restoreLayout(settings.value("layout").toByteArray());
    const QString json = settings.value("config").toString();
    // A config from an older version that no longer parses: keep the current one.
    if (!json.isEmpty() && setConfigJson(json))
        d->workbench->document()->undoStack()->clear();
}

} // namespace mantissa
