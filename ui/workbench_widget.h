#pragma once
// The public API of Mantissa::workbench: the whole workbench as one widget for a host
// application (find_package(Mantissa 0.2 COMPONENTS workbench); docs/embedding.md, and
// examples/host-app for a host). This is the one ui/ header that is installed: the panels,
// views and controllers behind it are private and change without notice.
//
// The host decides where runs are recorded (setDatabasePath) and where settings go
// (saveSettings/restoreSettings into a QSettings of its own): the widget never opens a
// database or writes QSettings by itself. Errors a user can cause come back as a false
// return with the reason in `error`, and are also shown in the widget and emitted as
// errorReported; nothing a host passes in makes it crash.
#include "engine/train/run_summary.h"

#include <QDateTime>
#include <QList>
#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <memory>

class QAction;
class QMenu;
class QSettings;

namespace mantissa {

// One training run, as the signals name it.
struct WorkbenchRun {
    qint64 runId = 0;  // in the run database; 0 when no database is set
    QString name;      // as the database named it ("mlp-fp32-3"), else "mlp · fp32"
    QString precision; // "fp32", "mixed-fp16", "mixed-bf16", ...
};

// How a run that trained ended.
struct WorkbenchRunResult {
    WorkbenchRun run;
    RunStatus status = RunStatus::Finished; // Finished, Stopped or Diverged
    QString message;                        // why, for a diverged run
    qint64 steps = 0;                       // optimizer steps, skipped ones included
    qint64 skippedSteps = 0;                // steps whose gradients overflowed
    int epochs = 0;                         // evaluated epochs; 0: testAccuracy is not known
    double testAccuracy = 0;                // in [0, 1]
};

// A run of the run database (storedRuns()).
struct StoredRunInfo {
    qint64 runId = 0;
    QString name, preset, precision;
    RunStatus status = RunStatus::Running;
    QDateTime createdAt; // UTC
};

class WorkbenchWidget : public QWidget {
    Q_OBJECT
public:
    // The toolbar actions, for the host's menus and shortcuts.
    enum class Action { Run, Pause, Stop, ComparePrecisions, Open, Save, Undo, Redo };

    // Starts with the built-in "mlp" preset and no run database.
    explicit WorkbenchWidget(QWidget* parent = nullptr);
    // Stops a run in progress and waits for its thread.
    ~WorkbenchWidget() override;

    // --- Configs and presets -------------------------------------------------------------
    // The built-in presets (presetNames() of the engine), then the host's.
    QStringList presetNames() const;
    // Adds a preset of the host's: `json` is a run config as in resources/presets/*.json or
    // a file saved with Save. It joins the Presets menu; a host preset of the same name is
    // replaced. False, with the reason, for JSON that is not a valid config or a name that
    // is empty or that of a built-in preset.
    bool addPreset(const QString& name, const QString& json, QString* error = nullptr);
    bool loadPreset(const QString& name, QString* error = nullptr);
    // A run config JSON file; errors name the file and the field.
    bool openConfig(const QString& path, QString* error = nullptr);
    bool saveConfig(const QString& path, QString* error = nullptr);
    // The config being edited, as JSON, and replacing it (one undo step).
    QString configJson() const;
    bool setConfigJson(const QString& json, QString* error = nullptr);

    // --- Training ------------------------------------------------------------------------
    // Trains the current config on a worker thread; false with the reason when it cannot
    // (a run in progress, or a config the editor flags, e.g. a model that does not fit
    // its data). The signals below follow.
    bool startRun(QString* error = nullptr);
    // Trains the config in fp32 and in its low precision (mixed-fp16 for an fp32 config),
    // same seed and data order, then shows the comparison.
    bool startComparison(QString* error = nullptr);
    // Pauses or resumes at the next step; false when no run is in progress.
    bool setPaused(bool paused);
    // Stops the run at the next step (it ends as "stopped", with a checkpoint) and drops
    // the runs queued behind it. Does nothing when none is in progress.
    void stopRun();
    bool isRunning() const;
    bool isPaused() const;

    // --- The run database ----------------------------------------------------------------
    // Records every run in the SQLite file `path` (created when missing; its directory must
    // exist). False, with the store's message naming the file, when it cannot be used (a
    // directory, a file that is not a run database, one from a newer Mantissa); runs are
    // then not recorded. An empty path records nothing.
    bool setDatabasePath(const QString& path, QString* error = nullptr);
    QString databasePath() const;
    // The runs of the database, newest first; empty with the reason when there is none.
    QList<StoredRunInfo> storedRuns(QString* error = nullptr) const;
    // Shows a stored run in the Monitor tab; several runs in the Comparison tab (runs of one
    // config over several seeds as means with bands).
    bool openStoredRun(qint64 runId, QString* error = nullptr);
    bool compareStoredRuns(const QList<qint64>& runIds, QString* error = nullptr);
    // Writes a report of `runIds` (the first is the baseline) in the background; the suffix
    // of `path` picks the format: .pdf, .html, .md or .csv. reportExported or reportFailed
    // follows; false at once, with the reason, when it cannot start.
    bool exportReport(const QList<qint64>& runIds, const QString& path, QString* error = nullptr);

    // --- Host integration ----------------------------------------------------------------
    QAction* action(Action which) const;
    QMenu* presetsMenu() const;
    // The widget's own toolbar; a host with the actions in its menus may hide it.
    void setToolBarVisible(bool visible);
    // Writes the splitter and tab layout and the config being edited under the current group
    // of `settings`, and reads them back. A config that no longer parses is skipped.
    void saveSettings(QSettings& settings) const;
    void restoreSettings(const QSettings& settings);

signals:
    // Training began: the data is loaded and, with a database, the run is recorded.
    void runStarted(const mantissa::WorkbenchRun& run);
    // Steps arrived: `step` is the newest (1-based) and `loss` its training loss. At most
    // 25 times a second, however fast the steps come.
    void stepsRecorded(qint64 runId, qint64 step, qint64 totalSteps, double loss);
    // A step's gradients overflowed: it was skipped and the loss scale backed off.
    // `parameter` is the first parameter whose gradient was not finite.
    void overflowed(qint64 runId, qint64 step, double scaleBefore, double scaleAfter, const QString& parameter);
    // A run ended after training: finished, stopped or diverged. Its row in the database
    // is complete when this arrives.
    void runFinished(const mantissa::WorkbenchRunResult& result);
    // A run could not train (missing data, a config the engine refuses, no device).
    void runFailed(const mantissa::WorkbenchRun& run, const QString& message);
    // A sequence of runs (startRun's one, startComparison's two) is over.
    void runsFinished();
    void reportExported(const QStringList& files);
    void reportFailed(const QString& message);
    // Every error the widget shows in its banner.
    void errorReported(const QString& title, const QString& message);

private:
    struct Private;
    std::unique_ptr<Private> d;
};

} // namespace mantissa

Q_DECLARE_METATYPE(mantissa::WorkbenchRun)
Q_DECLARE_METATYPE(mantissa::WorkbenchRunResult)
