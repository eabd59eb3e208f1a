#pragma once
// "Lab", a made-up experiment notebook that embeds the Mantissa workbench: its own notebook
// panel beside the WorkbenchWidget, its own menus, run database and preset, and a journal
// filled from the workbench's signals. Everything Mantissa here goes through the public
// API (mantissa/ui/workbench_widget.h).
#include <QMainWindow>

class QLabel;
class QListWidget;
class QProgressBar;

namespace mantissa {
class WorkbenchWidget;
}

class LabWindow : public QMainWindow {
    Q_OBJECT
public:
    // The lab's preset, added to the workbench's Presets menu and loaded at start.
    static constexpr const char* kPreset = "quick-mlp";

    // Records runs in `databasePath`. A path that cannot be used is reported in the journal
    // (databaseError() says why) and the lab carries on without recording.
    explicit LabWindow(const QString& databasePath, QWidget* parent = nullptr);

    mantissa::WorkbenchWidget* workbench() const { return m_workbench; }
    QListWidget* journal() const { return m_journal; }
    QString databaseError() const { return m_databaseError; }

    // Window and workbench layout in the lab's own settings (organization "ExampleLab").
    void restoreSettings();
    void saveSettings() const;

    // <AppDataLocation>/experiments.sqlite of the lab, not Mantissa's own runs.sqlite.
    static QString defaultDatabasePath();

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    void buildMenus();
    void connectWorkbench();
    void exportLatestReport();
    void note(const QString& line);

    mantissa::WorkbenchWidget* m_workbench;
    QListWidget* m_journal;
    QProgressBar* m_progress;
    QLabel* m_result;
    QString m_databaseError;
    qint64 m_latestRun = 0;
};
