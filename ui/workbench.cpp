#include "ui/workbench.h"

#include "engine/config/presets.h"
#include "engine/model/model_file.h"
#include "engine/util/check.h"
#include "storage/run_store.h"
#include "storage/stored_config.h"
#include "ui/comparison_view.h"
#include "ui/config_document.h"
#include "ui/data_panel.h"
#include "ui/error_banner.h"
#include "ui/gemm_input_panel.h"
#include "ui/loss_scale_plot.h"
#include "ui/model_editor.h"
#include "ui/model_file_view.h"
#include "ui/numerics_view.h"
#include "ui/precision_panel.h"
#include "ui/recipe_measurement.h"
#include "ui/recipe_panel.h"
#include "ui/report_export.h"
#include "ui/run_browser.h"
#include "ui/run_controller.h"
#include "ui/run_monitor.h"
#include "ui/run_status_bar.h"
#include "ui/stored_run.h"
#include "ui/sweep_comparison_view.h"
#include "ui/sweep_controller.h"
#include "ui/training_panel.h"

#include <QAction>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QUndoStack>
#include <QVBoxLayout>

#include <algorithm>

namespace mantissa::ui {

namespace {

QScrollArea* scrolled(QWidget* widget)
{
    auto* area = new QScrollArea;
    area->setWidget(widget);
    area->setWidgetResizable(true);
    area->setFrameShape(QFrame::NoFrame);
    return area;
}

} // namespace

Workbench::Workbench(QWidget* parent)
    : QWidget(parent), m_document(new ConfigDocument(this)), m_controller(new RunController(this)),
      m_sweeps(new SweepController(this))
{
    createActions();
    m_banner = new ErrorBanner;
    m_status = new RunStatusBar;
    m_splitter = new QSplitter(Qt::Horizontal);
    m_splitter->setObjectName("workbenchSplitter");
    m_splitter->addWidget(buildLeftSide());
    m_splitter->addWidget(buildRightSide());
    m_splitter->setStretchFactor(0, 2);
    m_splitter->setStretchFactor(1, 3);
    // The layer table has eight columns and needs ~720 px to show them all, parameters included.
    m_splitter->setSizes({720, 880});
    m_splitter->setChildrenCollapsible(false);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 0);
    layout->addWidget(m_toolBar);
    layout->addWidget(m_banner);
    layout->addWidget(m_splitter, 1);
    layout->addWidget(m_status);

    connect(m_document, &ConfigDocument::changed, this, &Workbench::updateActions);
    connect(m_controller, &RunController::runStarted, this, &Workbench::onRunStarted);
    connect(m_controller, &RunController::recordsArrived, this, &Workbench::onRecords);
    connect(m_controller, &RunController::runEnded, this, &Workbench::onRunEnded);
    connect(m_controller, &RunController::sequenceEnded, this, &Workbench::onSequenceEnded);
    connect(m_controller, &RunController::tick, m_monitor, &RunMonitor::refresh);
    connectSweeps();
    // The recipe table's link: the measured run's per-layer figures, on the GEMM inputs page.
    connect(m_precision->recipePanel(), &RecipePanel::numericsRequested, this, [this](qint64 runId) {
        showNumerics(runId);
        const int page = m_numerics->tableTabs()->indexOf(m_numerics->gemmInputPanel());
        if (m_numerics->tableTabs()->isTabEnabled(page))
            m_numerics->tableTabs()->setCurrentIndex(page);
        m_rightTabs->setCurrentWidget(m_numerics);
    });

    loadPreset("mlp");
    m_document->undoStack()->clear(); // the initial preset is not an edit to undo
    updateActions();
}

Workbench::~Workbench() = default;

void Workbench::createActions()
{
    m_toolBar = new QToolBar;
    m_toolBar->setObjectName("workbenchToolBar");
    m_toolBar->setToolButtonStyle(Qt::ToolButtonTextOnly);

    m_presets = new QMenu(tr("Presets"), this);
    for (const std::string& name : mantissa::presetNames()) {
        const QString preset = QString::fromStdString(name);
        m_presets->addAction(preset, this, [this, preset] { loadPreset(preset); });
    }
    auto* presetButton = new QToolButton;
    presetButton->setText(tr("Presets"));
    presetButton->setMenu(m_presets);
    presetButton->setPopupMode(QToolButton::InstantPopup);
    m_toolBar->addWidget(presetButton);

    m_open = m_toolBar->addAction(tr("Open…"), this, &Workbench::openWithDialog);
    m_open->setShortcut(QKeySequence::Open);
    m_save = m_toolBar->addAction(tr("Save…"), this, &Workbench::saveWithDialog);
    m_save->setShortcut(QKeySequence::Save);
    // In the host's File menu, not on the toolbar.
    m_importModel = new QAction(tr("Import model…"), this);
    m_importModel->setObjectName("importModelAction");
    m_importModel->setToolTip(tr("Train an ONNX model (torch.onnx.export, tf2onnx, Keras) with this config's data, "
                                 "precision and training settings"));
    connect(m_importModel, &QAction::triggered, this, &Workbench::importModelWithDialog);
    m_toolBar->addSeparator();
    // Fixed labels, the edit in the tooltip: QUndoStack's own actions put "Undo Change
    // precision.loss_scale.growth_interval" on the toolbar, which then jumps around.
    QUndoStack* stack = m_document->undoStack();
    m_undo = new QAction(tr("Undo"), this);
    m_undo->setShortcut(QKeySequence::Undo);
    m_undo->setEnabled(false);
    connect(m_undo, &QAction::triggered, stack, &QUndoStack::undo);
    connect(stack, &QUndoStack::canUndoChanged, m_undo, &QAction::setEnabled);
    connect(stack, &QUndoStack::undoTextChanged, m_undo,
            [this](const QString& text) { m_undo->setToolTip(tr("Undo %1").arg(text)); });
    m_redo = new QAction(tr("Redo"), this);
    m_redo->setShortcut(QKeySequence::Redo);
    m_redo->setEnabled(false);
    connect(m_redo, &QAction::triggered, stack, &QUndoStack::redo);
    connect(stack, &QUndoStack::canRedoChanged, m_redo, &QAction::setEnabled);
    connect(stack, &QUndoStack::redoTextChanged, m_redo,
            [this](const QString& text) { m_redo->setToolTip(tr("Redo %1").arg(text)); });
    m_toolBar->addAction(m_undo);
    m_toolBar->addAction(m_redo);
    m_toolBar->addSeparator();

    m_run = m_toolBar->addAction(tr("Run"), this, &Workbench::startRun);
    m_run->setObjectName("runAction");
    m_run->setShortcut(Qt::CTRL | Qt::Key_R);
    m_pause = m_toolBar->addAction(tr("Pause"));
    m_pause->setObjectName("pauseAction");
    m_pause->setCheckable(true);
    connect(m_pause, &QAction::toggled, this, [this](bool paused) {
        m_controller->setPaused(paused);
        m_pause->setText(paused ? tr("Resume") : tr("Pause"));
        m_status->showMessage(paused ? tr("Paused; press Resume to continue.") : tr("Training…"));
    });
    m_stop = m_toolBar->addAction(tr("Stop"), this, &Workbench::stopTraining);
    m_stop->setObjectName("stopAction");
    m_toolBar->addSeparator();
    m_compare = new QAction(tr("Compare precisions"), this);
    m_compare->setObjectName("compareAction");
    connect(m_compare, &QAction::triggered, this, &Workbench::startComparison);
    // The set to compare is chosen in the button's menu (its arrow).
    m_precisionSet = new PrecisionSetMenu(this);
    connect(m_precisionSet, &PrecisionSetMenu::changed, this, &Workbench::updateActions);
    auto* compareButton = new QToolButton;
    compareButton->setDefaultAction(m_compare);
    compareButton->setMenu(m_precisionSet);
    compareButton->setPopupMode(QToolButton::MenuButtonPopup);
    m_toolBar->addWidget(compareButton);
    // One seed answers "does it train?"; whether a difference is more than noise needs several
    // (docs/sweeps.md): N > 1 makes the comparison a sweep over precisions x seeds.
    m_seeds = new QSpinBox;
    m_seeds->setObjectName("comparisonSeeds");
    m_seeds->setRange(1, 64);
    m_seeds->setValue(1);
    m_seeds->setPrefix(tr("seeds: "));
    m_seeds->setToolTip(tr("Seeds per precision. 1 compares one run of each with the config's seed; N > 1 runs a "
                           "sweep over the precisions and seeds 0 to N-1 in worker processes and compares their "
                           "means with bands and statistics"));
    m_toolBar->addWidget(m_seeds);
    m_sweep = m_toolBar->addAction(tr("Sweep…"), this, &Workbench::editSweepWithDialog);
    m_sweep->setObjectName("sweepAction");
    m_sweep->setToolTip(tr("Run any grid over this config: precisions, loss scales, learning rates, batch sizes or "
                           "any config key, times seeds"));
    m_import = m_toolBar->addAction(tr("Import sweep…"), this, &Workbench::importWithDialog);
    m_import->setObjectName("importAction");
    m_import->setToolTip(tr("Import the runs of a Slurm sweep's directory (as mantissa-cli import does)"));
    m_studies = m_toolBar->addAction(tr("Studies…"), this, [this] { openStudies(); });
    m_studies->setObjectName("studiesAction");
    m_studies->setToolTip(tr("Papers' claims rerun as arms x seeds: each study's report from this run database"));
}

QWidget* Workbench::buildLeftSide()
{
    m_editor = new ModelEditor(m_document);
    m_modelFile = new ModelFileView(m_document);
    m_modelStack = new QStackedWidget;
    m_modelStack->addWidget(m_editor);
    m_modelStack->addWidget(m_modelFile);
    connect(m_document, &ConfigDocument::changed, this, &Workbench::showModelKind);
    m_precision = new PrecisionPanel(m_document);
    m_training = new TrainingPanel(m_document);
    m_data = new DataPanel(m_document);
    m_data->setObjectName("dataPanel");
    m_leftTabs = new QTabWidget;
    m_leftTabs->setObjectName("leftTabs");
    m_leftTabs->addTab(m_modelStack, tr("Model"));
    m_leftTabs->addTab(scrolled(m_precision), tr("Precision"));
    m_leftTabs->addTab(scrolled(m_training), tr("Training"));
    m_leftTabs->addTab(scrolled(m_data), tr("Data"));
    return m_leftTabs;
}

QWidget* Workbench::buildRightSide()
{
    m_monitor = new RunMonitor;
    connect(m_monitor, &RunMonitor::forkRequested, this, &Workbench::forkStoredRun);
    m_numerics = new NumericsView;
    m_numerics->setObjectName("numerics");
    connect(m_monitor->scalePlot(), &LossScalePlot::overflowClicked, this, [this](const OverflowMarker& m) {
        // The overflow's localised layer; else the first non-finite parameter's
        // ("3.linear.weight"), which is the name without its last component.
        const qsizetype dot = m.parameter.lastIndexOf('.');
        const QString layer = !m.layer.isEmpty() ? m.layer : dot > 0 ? m.parameter.left(dot) : m.parameter;
        m_numerics->selectStep(static_cast<qint64>(m.step), layer);
        m_rightTabs->setCurrentWidget(m_numerics);
    });
    m_comparison = new ComparisonView;
    m_sweepView = new SweepComparisonView;
    m_sweepView->setObjectName("sweepComparison");
    m_comparisonStack = new QStackedWidget;
    m_comparisonStack->addWidget(m_comparison);
    m_comparisonStack->addWidget(m_sweepView);
    m_browser = new RunBrowser;
    connect(m_browser, &RunBrowser::openRequested, this, &Workbench::openStoredRun);
    connect(m_browser, &RunBrowser::compareRequested, this, &Workbench::compareStoredRuns);
    connect(m_browser, &RunBrowser::initFromRequested, this, &Workbench::startFromWeightsOf);
    connect(m_browser, &RunBrowser::storeError, this,
            [this](const QString& message) { m_banner->showError(tr("Run database"), message); });
    // Report export runs in the background: a busy bar while it reads and writes, then the files.
    connect(m_browser->reportExport(), &ReportExport::progress, m_status, &RunStatusBar::showLoading);
    connect(m_browser->reportExport(), &ReportExport::finished, this, [this](const QStringList& files) {
        m_status->hideProgress();
        m_status->showMessage(tr("Report written: %1").arg(files.join(", ")), 15000);
    });
    connect(m_browser->reportExport(), &ReportExport::failed, m_status, &RunStatusBar::hideProgress);
    m_rightTabs = new QTabWidget;
    m_rightTabs->setObjectName("rightTabs");
    m_rightTabs->addTab(m_monitor, tr("Monitor"));
    m_rightTabs->addTab(m_numerics, tr("Numerics"));
    m_rightTabs->addTab(m_comparisonStack, tr("Comparison"));
    m_rightTabs->addTab(m_browser, tr("Runs"));
    // The writer commits at least once a second, so looking more often finds nothing new.
    m_numericsPoll = new QTimer(this);
    m_numericsPoll->setInterval(1000);
    connect(m_numericsPoll, &QTimer::timeout, this, &Workbench::pollNumerics);
    connect(m_rightTabs, &QTabWidget::currentChanged, this, [this] {
        if (m_numericsPoll->isActive())
            pollNumerics();
    });
    return m_rightTabs;
}

void Workbench::updateActions()
{
    const bool sweeping = m_sweeps->isRunning();
    const bool running = m_controller->isRunning() || sweeping;
    const QString blocker = m_document->runBlocker();
    const bool canRun = !running && blocker.isEmpty();
    m_run->setEnabled(canRun);
    m_compare->setEnabled(canRun);
    m_pause->setEnabled(running && !sweeping); // workers stop at a step boundary, they do not pause
    m_stop->setEnabled(running);
    m_seeds->setEnabled(!running);
    m_sweep->setEnabled(canRun);
    m_import->setEnabled(!sweeping);
    QStringList compared;
    for (PrecisionMode mode : m_precisionSet->modes(m_document->config().precision))
        compared << QString::fromStdString(precisionModeName(mode));
    m_compare->setToolTip(compared.size() < 2
                              ? tr("Choose two or more precisions in this button's menu")
                              : tr("Train this config in %1 with the same seed and data order, then compare "
                                   "them (the menu chooses the precisions)")
                                    .arg(compared.join(", ")));
    m_run->setToolTip(running ? tr("A run is in progress") : blocker.isEmpty() ? tr("Train this config") : blocker);
    if (!running) {
        // Clear only our own "cannot run" note: a finished run's message must stay.
        if (!blocker.isEmpty())
            m_status->showMessage(tr("Cannot run: %1").arg(blocker));
        else if (m_showingBlocker)
            m_status->clearMessage();
        m_showingBlocker = !blocker.isEmpty();
    }
    // Editing the config mid-run would not affect the run; presets and files wait too.
    m_open->setEnabled(!running);
    m_importModel->setEnabled(!running);
    m_presets->setEnabled(!running);
}

bool Workbench::loadPreset(const QString& name)
{
    try {
        const auto host = std::find_if(m_hostPresets.begin(), m_hostPresets.end(),
                                       [&](const auto& preset) { return preset.first == name; });
        m_document->load(host != m_hostPresets.end() ? host->second : presetConfig(name.toStdString()),
                         tr("Load preset %1").arg(name));
        m_status->showMessage(tr("Loaded preset %1").arg(name), 4000);
        return true;
    } catch (const Error& e) {
        m_banner->showError(tr("Cannot load preset %1").arg(name), QString::fromStdString(e.what()));
        return false;
    }
}

void Workbench::addPreset(const QString& name, const RunConfig& config)
{
    for (auto& preset : m_hostPresets) {
        if (preset.first == name) {
            preset.second = config;
            return;
        }
    }
    m_hostPresets.emplace_back(name, config);
    if (!m_hostPresetsSeparator)
        m_hostPresetsSeparator = m_presets->addSeparator();
    m_presets->addAction(name, this, [this, name] { loadPreset(name); });
}

QStringList Workbench::presetNames() const
{
    QStringList names;
    for (const std::string& name : mantissa::presetNames())
        names << QString::fromStdString(name);
    for (const auto& preset : m_hostPresets)
        names << preset.first;
    return names;
}

bool Workbench::openConfig(const QString& path, QString* error)
{
    try {
        RunConfig config = loadRunConfigFile(path.toStdString());
        if (config.name.empty())
            config.name = QFileInfo(path).completeBaseName().toStdString();
        m_document->load(config, tr("Open %1").arg(QFileInfo(path).fileName()));
        return true;
    } catch (const Error& e) {
        if (error)
            *error = QString::fromStdString(e.what());
        return false;
    }
}

bool Workbench::saveConfig(const QString& path, QString* error)
{
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text)) {
        if (error)
            *error = tr("%1: cannot write (%2)").arg(path, file.errorString());
        return false;
    }
    file.write(QByteArray::fromStdString(runConfigToJson(m_document->config())));
    file.write("\n");
    return true;
}

bool Workbench::importModel(const QString& path, QString* error)
{
    try {
        RunConfig config = m_document->config();
        config.name = QFileInfo(path).completeBaseName().toStdString();
        config.description.clear();
        useModelFile(config, path.toStdString());
        m_document->load(config, tr("Import model %1").arg(QFileInfo(path).fileName()));
        m_status->showMessage(tr("Imported %1").arg(QFileInfo(path).fileName()), 4000);
        return true;
    } catch (const Error& e) {
        if (error)
            *error = QString::fromLocal8Bit(e.what());
        return false;
    }
}

void Workbench::importModelWithDialog()
{
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Import model"), {}, tr("ONNX models (*.onnx);;All files (*)"));
    QString error;
    if (!path.isEmpty() && !importModel(path, &error))
        QMessageBox::warning(this, tr("Import model"), error);
}

void Workbench::showModelKind()
{
    m_modelStack->setCurrentWidget(m_document->config().model.onnx.empty() ? static_cast<QWidget*>(m_editor)
                                                                           : m_modelFile);
}

void Workbench::openWithDialog()
{
    const QString path = QFileDialog::getOpenFileName(this, tr("Open run config"), {}, tr("Run configs (*.json)"));
    QString error;
    if (!path.isEmpty() && !openConfig(path, &error))
        QMessageBox::warning(this, tr("Open run config"), error);
}

void Workbench::saveWithDialog()
{
    const QString suggested = QString::fromStdString(m_document->config().name) + ".json";
    QString path = QFileDialog::getSaveFileName(this, tr("Save run config"), suggested, tr("Run configs (*.json)"));
    if (path.isEmpty())
        return;
    if (!path.endsWith(".json"))
        path += ".json";
    QString error;
    if (!saveConfig(path, &error))
        QMessageBox::warning(this, tr("Save run config"), error);
}

bool Workbench::startRun()
{
    const QString blocker = m_document->runBlocker();
    if (m_controller->isRunning() || !blocker.isEmpty()) {
        m_status->showMessage(blocker.isEmpty() ? tr("A run is in progress") : tr("Cannot run: %1").arg(blocker));
        return false;
    }
    m_comparing = false;
    m_sequence.clear();
    RecordingTarget target;
    target.databasePath = databasePath();
    return m_controller->start({m_document->config()}, target);
}

bool Workbench::startComparison()
{
    const QString blocker = m_document->runBlocker();
    if (m_controller->isRunning() || m_sweeps->isRunning() || !blocker.isEmpty()) {
        m_status->showMessage(blocker.isEmpty() ? tr("A run is in progress") : tr("Cannot run: %1").arg(blocker));
        return false;
    }
    const QList<PrecisionMode> modes = m_precisionSet->modes(m_document->config().precision);
    if (modes.size() < 2) {
        m_status->showMessage(tr("Cannot compare: choose two or more precisions in the menu of Compare precisions"));
        return false;
    }
    if (m_seeds->value() > 1)
        return startPrecisionSweep(modes, m_seeds->value());
    const QList<RunConfig> runs = comparisonConfigs(m_document->config(), modes);
    m_comparing = true;
    m_comparisonRuns = static_cast<int>(runs.size());
    m_sequence.clear();
    RecordingTarget target;
    target.databasePath = databasePath();
    if (m_store) {
        // One comparison group, so the runs can be found and reported together later.
        QStringList others;
        for (const RunConfig& run : runs.mid(1))
            others << QString::fromStdString(precisionModeName(run.precision));
        try {
            target.groupId = m_store->createGroup(
                QString("%1: %2 vs %3")
                    .arg(QString::fromStdString(runs.front().name),
                         QString::fromStdString(precisionModeName(runs.front().precision)), others.join(", ")));
        } catch (const std::exception& e) {
            m_banner->showError(tr("Run database"), QString::fromLocal8Bit(e.what()));
        }
    }
    return m_controller->start(runs, target);
}

QList<std::shared_ptr<const RunRecording>> Workbench::sessionRuns() const { return m_session; }

void Workbench::showComparison(QList<std::shared_ptr<const RunRecording>> runs)
{
    m_comparison->setRuns(std::move(runs));
    m_comparisonStack->setCurrentWidget(m_comparison);
    m_rightTabs->setCurrentWidget(m_comparisonStack);
}

void Workbench::showRunBrowser() { m_rightTabs->setCurrentWidget(m_browser); }

void Workbench::onRunStarted(int index, const RunConfig& config)
{
    m_banner->hide();
    m_current = std::make_shared<RunRecording>();
    m_current->config = config;
    m_current->name = recordingName(config);
    m_monitor->setRecording(m_current);
    m_numerics->clear(
        config.numerics.every > 0
            ? tr("The per-layer statistics of %1 appear here from its first sampled step.").arg(m_current->name)
            : tr("%1 records no per-layer statistics: set Training → Statistics every N steps "
                 "before training to see them here.")
                  .arg(m_current->name));
    if (config.numerics.every > 0 || config.numerics.shadowEvery > 0)
        m_numericsPoll->start();
    m_rightTabs->setCurrentWidget(m_monitor);
    const QString which = m_comparing ? tr(" (run %1 of %2)").arg(index + 1).arg(m_comparisonRuns) : QString();
    m_status->showMessage(tr("Loading data for %1%2…").arg(m_current->name, which));
    m_status->showLoading(tr("loading data"));
    {
        const QSignalBlocker blocker(m_pause);
        m_pause->setChecked(false);
        m_pause->setText(tr("Pause"));
    }
    updateActions();
}

void Workbench::onRecords(const RecordBatch& batch)
{
    if (!m_current)
        return;
    m_current->append(batch);
    if (batch.started)
        m_status->showMessage(tr("Training %1 on %2 (%3 training samples; loss scaling: %4)")
                                  .arg(m_current->name, batch.started->device)
                                  .arg(batch.started->trainSamples)
                                  .arg(batch.started->scaler));
    if (!batch.steps.empty() && m_current->start) {
        const StepRecord& last = batch.steps.back();
        double rate = 0; // the batch's mean: one step's figure jitters too much to read
        for (const StepRecord& s : batch.steps)
            rate += s.samplesPerSecond;
        rate /= static_cast<double>(batch.steps.size());
        m_status->showProgress(last.step, m_current->start->totalSteps, rate, last.elapsedSeconds);
    }
}

void Workbench::onRunEnded(int, const RunSummary& summary, const QString& failure)
{
    m_status->hideProgress();
    m_numericsPoll->stop();
    if (!m_current)
        return;
    std::shared_ptr<const RunRecording> finished = m_current;
    m_session << finished;
    m_sequence << finished;
    m_monitor->refresh();
    const QString what = m_current->name;
    switch (summary.status) {
    case RunStatus::Failed:
        m_banner->showError(tr("%1 could not train").arg(what),
                            failure.isEmpty() ? QString::fromStdString(summary.message) : failure);
        m_status->showMessage(tr("%1 failed").arg(what));
        break;
    case RunStatus::Diverged:
        m_banner->showError(tr("%1 diverged").arg(what), QString::fromStdString(summary.message));
        m_status->showMessage(tr("%1 diverged").arg(what));
        break;
    default: m_status->showMessage(tr("%1: %2").arg(what, recordingStateText(*m_current))); break;
    }
    m_browser->reload();
    // The last sampled steps may have been committed after the last poll: read the run
    // back whole now that the recorder has written all of it.
    showNumerics(finished->runId);
    measureForPrecisionPanel(*finished);
    emit runFinished(finished);
    updateActions();
}

void Workbench::onSequenceEnded(bool completed)
{
    updateActions();
    if (m_comparing && completed && m_sequence.size() >= 2) {
        showComparison(m_sequence);
        emit comparisonFinished();
    }
    m_comparing = false;
}

bool Workbench::setDatabasePath(const QString& path, QString* error)
{
    m_browser->setStore(nullptr);
    m_store.reset();
    if (path.isEmpty())
        return true;
    try {
        m_store = std::make_unique<storage::RunStore>(path);
    } catch (const std::exception& e) {
        if (error)
            *error = QString::fromLocal8Bit(e.what());
        m_banner->showError(tr("Runs are not recorded"), QString::fromLocal8Bit(e.what()));
        return false;
    }
    m_browser->setStore(m_store.get());
    return true;
}

bool Workbench::openStoredRunNumerics(qint64 runId)
{
    if (!openStoredRun(runId))
        return false;
    m_rightTabs->setCurrentWidget(m_numerics);
    return true;
}

QString Workbench::databasePath() const { return m_store ? m_store->path() : QString(); }

bool Workbench::openStoredRun(qint64 runId)
{
    if (!m_store)
        return false;
    try {
        const std::shared_ptr<const RunRecording> run = loadStoredRun(*m_store, runId);
        showStoredConfig(runId);
        m_monitor->setRecording(run);
        // The tab shows the opened run now, no longer the one training.
        m_numericsPoll->stop();
        m_numerics->setRun(m_store.get(), runId);
        measureForPrecisionPanel(*run);
    } catch (const std::exception& e) {
        m_banner->showError(tr("Cannot open run %1").arg(runId), QString::fromLocal8Bit(e.what()));
        return false;
    }
    m_rightTabs->setCurrentWidget(m_monitor);
    return true;
}

void Workbench::showStoredConfig(qint64 runId)
{
    // A run in progress keeps its own config in the panels: they show what is training.
    if (m_controller->isRunning())
        return;
    const storage::RunInfo run = m_store->run(runId);
    m_document->load(storage::storedRunConfig(*m_store, run), tr("Open the config of %1").arg(run.name));
}

bool Workbench::startFromWeightsOf(qint64 runId)
{
    if (!m_store)
        return false;
    try {
        const storage::RunInfo run = m_store->run(runId);
        const QList<storage::CheckpointInfo> checkpoints = m_store->checkpoints(runId);
        if (checkpoints.isEmpty()) {
            m_banner->showError(tr("%1 has no checkpoint").arg(run.name),
                                tr("Runs save one when they finish or are stopped, not when they diverge or fail."));
            return false;
        }
        const storage::CheckpointInfo& latest = checkpoints.last();
        RunConfig next = m_document->config();
        next.training.initFrom = latest.absolutePath.toStdString();
        m_document->apply(next, tr("Start from the weights of %1").arg(run.name));
        m_status->showMessage(tr("The next run starts from the weights of %1 (epoch %2, step %3); Training tab: "
                                 "“Fresh weights” undoes it")
                                  .arg(run.name)
                                  .arg(latest.epoch)
                                  .arg(latest.step));
    } catch (const std::exception& e) {
        m_banner->showError(tr("Cannot start from run %1").arg(runId), QString::fromLocal8Bit(e.what()));
        return false;
    }
    return true;
}

void Workbench::showNumerics(qint64 runId)
{
    if (!m_store || runId <= 0) {
        m_numerics->clear(tr("This run was not recorded in a run database, so its statistics cannot be shown."));
        return;
    }
    try {
        // Followed live: take the steps committed since the last poll and keep the user's
        // choice of layer, tensor and step.
        if (m_numerics->runId() == runId)
            m_numerics->refresh();
        else
            m_numerics->setRun(m_store.get(), runId);
    } catch (const std::exception& e) {
        m_numerics->clear(
            tr("Cannot read the statistics of run %1: %2").arg(runId).arg(QString::fromLocal8Bit(e.what())));
    }
}

void Workbench::pollNumerics()
{
    // Reading and drawing the heatmap costs the UI thread a few milliseconds: only while
    // the tab is in view; switching to it catches up.
    if (!m_store || !m_current || m_current->runId <= 0 || !m_numerics->isVisible())
        return;
    try {
        if (m_numerics->runId() != m_current->runId)
            m_numerics->follow(m_store.get(), m_current->runId);
        else
            m_numerics->refresh();
    } catch (const std::exception& e) {
        m_numericsPoll->stop();
        m_numerics->clear(
            tr("Cannot read the statistics of run %1: %2").arg(m_current->runId).arg(QString::fromLocal8Bit(e.what())));
    }
}

void Workbench::measureForPrecisionPanel(const RunRecording& run)
{
    if (!m_store || run.runId <= 0 || run.config.numerics.every <= 0)
        return;
    try {
        if (auto measured = readRecipeMeasurement(*m_store, run.runId, run.config, run.name))
            m_precision->recipePanel()->setMeasurement(std::move(*measured));
    } catch (const std::exception&) {
        // The Numerics tab, reading the same rows, has already said why they cannot be read.
    }
}

bool Workbench::compareStoredRuns(const QList<qint64>& runIds)
{
    if (!m_store || runIds.size() < 2)
        return false;
    QList<std::shared_ptr<const RunRecording>> runs;
    try {
        // Runs of one configuration over several seeds compare as a sweep does: means, bands
        // and statistics rather than one curve per run.
        if (auto grouped = loadSeedGroupComparison(*m_store, runIds)) {
            showStoredConfig(runIds.front());
            showSweepComparison(std::move(*grouped));
            return true;
        }
        for (qint64 id : runIds)
            runs << loadStoredRun(*m_store, id);
        showStoredConfig(runIds.front());
    } catch (const std::exception& e) {
        m_banner->showError(tr("Cannot compare these runs"), QString::fromLocal8Bit(e.what()));
        return false;
    }
    showComparison(runs);
    return true;
}

QByteArray Workbench::saveLayout() const
{
    QByteArray state;
    QDataStream out(&state, QIODevice::WriteOnly);
    out << m_splitter->saveState() << m_leftTabs->currentIndex() << m_rightTabs->currentIndex()
        << m_precisionSet->checkedKeys();
    return state;
}

void Workbench::restoreLayout(const QByteArray& state)
{
    QDataStream in(state);
    QByteArray splitter;
    int left = 0, right = 0;
    in >> splitter >> left >> right;
    if (in.status() != QDataStream::Ok)
        return;
    m_splitter->restoreState(splitter);
    m_leftTabs->setCurrentIndex(left);
    m_rightTabs->setCurrentIndex(right);
    // Absent from the states saved before the precisions to compare were a choice.
    QStringList compared;
    in >> compared;
    if (in.status() == QDataStream::Ok && !compared.isEmpty())
        m_precisionSet->setCheckedKeys(compared);
}

} // namespace mantissa::ui
