#pragma once
// The Workbench: the whole application as one embeddable widget. It holds the model editor,
// the precision and training panels, the run monitor and the comparison view, runs training
// on a worker thread through RunController, and offers its actions (run, pause, stop,
// compare precisions, presets, open, save, undo, redo) for a host's menus and toolbars.
#include "engine/sweep/sweep_spec.h"
#include "ui/precision_set_menu.h"
#include "ui/run_recording.h"
#include "ui/sweep_comparison.h"

#include <QList>
#include <QStringList>
#include <QWidget>

#include <memory>
#include <utility>
#include <vector>

class QAction;
class QMenu;
class QSpinBox;
class QSplitter;
class QStackedWidget;
class QTabWidget;
class QTimer;
class QToolBar;

namespace mantissa::storage {
class RunStore;
}

namespace mantissa::ui {

class ComparisonView;
class RunBrowser;
class ConfigDocument;
class ErrorBanner;
class ModelEditor;
class ModelFileView;
class NumericsView;
class PrecisionPanel;
class RunController;
class RunMonitor;
class RunStatusBar;
class SweepComparisonView;
class SweepController;
class StudiesDialog;
class TrainingPanel;
class DataPanel;
struct RecordBatch;

class Workbench : public QWidget {
    Q_OBJECT
public:
    explicit Workbench(QWidget* parent = nullptr);
    ~Workbench() override;

    ConfigDocument* document() const { return m_document; }
    RunController* controller() const { return m_controller; }
    ModelEditor* modelEditor() const { return m_editor; }
    // The Model tab's view of an imported model (model.onnx), shown instead of the editor.
    ModelFileView* modelFileView() const { return m_modelFile; }
    PrecisionPanel* precisionPanel() const { return m_precision; }
    TrainingPanel* trainingPanel() const { return m_training; }
    DataPanel* dataPanel() const { return m_data; }
    RunMonitor* monitor() const { return m_monitor; }
    NumericsView* numerics() const { return m_numerics; }
    ComparisonView* comparison() const { return m_comparison; }
    SweepComparisonView* sweepComparison() const { return m_sweepView; }
    SweepController* sweeps() const { return m_sweeps; }
    QSpinBox* comparisonSeeds() const { return m_seeds; }
    // The precisions Compare precisions trains (the menu beside it); saved with the layout.
    PrecisionSetMenu* comparisonPrecisions() const { return m_precisionSet; }
    RunBrowser* runBrowser() const { return m_browser; }
    RunStatusBar* statusBar() const { return m_status; }
    ErrorBanner* banner() const { return m_banner; }
    QToolBar* toolBar() const { return m_toolBar; }
    QMenu* presetsMenu() const { return m_presets; }

    QAction* runAction() const { return m_run; }
    QAction* pauseAction() const { return m_pause; }
    QAction* stopAction() const { return m_stop; }
    QAction* compareAction() const { return m_compare; }
    QAction* sweepAction() const { return m_sweep; }
    QAction* importAction() const { return m_import; }
    QAction* openAction() const { return m_open; }
    QAction* importModelAction() const { return m_importModel; }
    QAction* saveAction() const { return m_save; }
    QAction* undoAction() const { return m_undo; }
    QAction* redoAction() const { return m_redo; }

    // Config files and presets. Errors come back as a message naming the file and field;
    // loadPreset shows its error in the banner.
    bool loadPreset(const QString& name);
    // A preset of the host's own (WorkbenchWidget::addPreset), listed after the built-in
    // ones; one of the same name is replaced.
    void addPreset(const QString& name, const RunConfig& config);
    // The built-in presets, then the host's.
    QStringList presetNames() const;
    bool openConfig(const QString& path, QString* error = nullptr);
    // Makes the current config train the ONNX model at `path` (one undo step), keeping its data,
    // precision and training settings; the Model tab then lists the model's nodes. False, with
    // the reason in `error` (the file, the node, the shape at fault), when it cannot be trained.
    bool importModel(const QString& path, QString* error = nullptr);
    bool saveConfig(const QString& path, QString* error = nullptr);

    // Trains the current config; false (with the reason in the status bar) when it cannot.
    bool startRun();
    // Trains the current config in each precision of comparisonPrecisions() (by default fp32 and
    // the config's own, mixed-fp16 when that is fp32), one after the other with the same seed and
    // data order, then opens the comparison. With "seeds: N" above 1, a sweep over those
    // precisions times seeds 0 to N-1 instead (startSweep). False, with the reason in the
    // status line, when fewer than two precisions are chosen.
    bool startComparison();
    // Runs (or resumes) a sweep in the background, recorded in the run database like
    // `mantissa-cli sweep`, with progress in the status bar; when it ends, its comparison opens.
    // False, with the reason in the banner, when it cannot start.
    bool startSweep(const SweepSpec& spec);
    // Shows a stored sweep (mean curves with bands, statistics) in the Comparison tab, with its
    // first run's config in the panels.
    bool showSweep(qint64 sweepId);
    // Merges the run databases under `path` (a Slurm sweep's --out, as `mantissa-cli import`
    // does) into the run database and shows the newest sweep with runs. Files that
    // are not run databases are skipped by name (in the status line and `summary`).
    bool importSweepDirectory(const QString& path, QString* summary = nullptr);
    // The Studies window (studies/ with each study's report from the run database), on the
    // study `name` when given; its "Show sweep" opens the study's sweep here.
    StudiesDialog* openStudies(const QString& name = {});
    // Runs trained in this session, oldest first.
    QList<std::shared_ptr<const RunRecording>> sessionRuns() const;
    void showComparison(QList<std::shared_ptr<const RunRecording>> runs);
    void showRunBrowser();

    // The run database every run is recorded in (created when missing). An empty path, or
    // a file that cannot be opened (then false and `error` says why), records nothing.
    bool setDatabasePath(const QString& path, QString* error = nullptr);
    QString databasePath() const;
    storage::RunStore* store() const { return m_store.get(); }
    // Shows a recorded run in the monitor / recorded runs in the comparison, read back
    // from the database, with the run's config (the first run's) in the panels. False (and
    // the reason in the banner) when they cannot be read.
    bool openStoredRun(qint64 runId);
    // openStoredRun, then its Numerics tab in view (on the shadow error page when the run has
    // only that).
    bool openStoredRunNumerics(qint64 runId);
    // The next run starts from the stored run's latest checkpoint (training.init_from, one undo
    // step); false, with the reason in the banner, when it has none.
    bool startFromWeightsOf(qint64 runId);
    bool compareStoredRuns(const QList<qint64>& runIds);
    // "Fork from here…" on a recorded run's loss curve: asks (ForkDialog) how the fork differs
    // and starts it from the run's training state saved nearest `step`. False, with the reason
    // in the banner, when the run has no saved state or the fork cannot start (or on Cancel).
    bool forkStoredRun(qint64 runId, double step);
    // The fork without the dialog: continues the state of `runId` saved after `step` with
    // `config` (the parent's, changed), recorded as its fork. False, with the reason in the
    // banner, when there is no state at `step` (the steps that have one are listed).
    bool startFork(qint64 runId, qint64 step, const RunConfig& config, const QString& name = {});

    // Splitter and tab positions and the precisions to compare, for a host's QSettings.
    QByteArray saveLayout() const;
    void restoreLayout(const QByteArray& state);

signals:
    // A run ended (any status); `recording` holds everything it produced.
    void runFinished(std::shared_ptr<const mantissa::ui::RunRecording> recording);
    void comparisonFinished();
    // A sweep started from the workbench ended (all runs done, or stopped).
    void sweepFinished(qint64 sweepId);

private:
    void createActions();
    QWidget* buildLeftSide();
    QWidget* buildRightSide();
    void updateActions();
    void openWithDialog();
    void importModelWithDialog();
    // The Model tab shows the layer editor, or the imported model's nodes.
    void showModelKind();
    void saveWithDialog();
    void onRunStarted(int index, const RunConfig& config);
    void onRecords(const RecordBatch& batch);
    void onRunEnded(int index, const RunSummary& summary, const QString& failure);
    void onSequenceEnded(bool completed);
    void connectSweeps();
    bool startPrecisionSweep(const QList<PrecisionMode>& modes, int seeds);
    // Loads stored run `runId`'s config into the panels (one undo step), so that they show the
    // settings of the run on view: opening a run, a comparison (its first run) or a sweep (its
    // first run). Nothing while a run trains. Throws what the store and the parser throw.
    void showStoredConfig(qint64 runId);
    // Hands a finished run's sampled statistics to the precision panel's recipe table.
    void measureForPrecisionPanel(const RunRecording& run);
    void editSweepWithDialog();
    void importWithDialog();
    void showSweepComparison(SweepComparison comparison);
    void stopTraining();
    void showNumerics(qint64 runId);
    void pollNumerics();

    ConfigDocument* m_document;
    RunController* m_controller;
    QToolBar* m_toolBar;
    QMenu* m_presets;
    ErrorBanner* m_banner;
    ModelEditor* m_editor;
    ModelFileView* m_modelFile;
    QStackedWidget* m_modelStack;
    PrecisionPanel* m_precision;
    TrainingPanel* m_training;
    DataPanel* m_data;
    RunMonitor* m_monitor;
    NumericsView* m_numerics;
    QTimer* m_numericsPoll; // while a run trains and the Numerics tab is shown
    ComparisonView* m_comparison;
    SweepComparisonView* m_sweepView;
    QStackedWidget* m_comparisonStack; // the Comparison tab: run by run, or a sweep
    SweepController* m_sweeps;
    QSpinBox* m_seeds;
    PrecisionSetMenu* m_precisionSet;
    RunBrowser* m_browser;
    std::unique_ptr<storage::RunStore> m_store;
    RunStatusBar* m_status;
    QSplitter* m_splitter;
    QTabWidget* m_leftTabs;
    QTabWidget* m_rightTabs;
    QAction *m_run, *m_pause, *m_stop, *m_compare, *m_open, *m_save, *m_undo, *m_redo;
    QAction *m_sweep, *m_import, *m_importModel, *m_studies;
    int m_sweepJobs = 0; // runs at once of the next sweep (the editor's choice); 0: one per core

    std::shared_ptr<RunRecording> m_current;
    QList<std::shared_ptr<const RunRecording>> m_session;
    QList<std::shared_ptr<const RunRecording>> m_sequence; // runs of the current sequence
    bool m_comparing = false;
    int m_comparisonRuns = 0;      // runs in the comparison being trained
    bool m_showingBlocker = false; // the status line shows why Run is disabled
    std::vector<std::pair<QString, RunConfig>> m_hostPresets;
    QAction* m_hostPresetsSeparator = nullptr;
};

} // namespace mantissa::ui
