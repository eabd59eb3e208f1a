#pragma once
// The GUI's window: the Workbench as its central widget, its actions in menus, and the
// window layout, last config and state kept in QSettings between sessions.
#include <QMainWindow>

namespace mantissa::ui {
class AdvisorPanel;
class Workbench;
} // namespace mantissa::ui

namespace mantissa::gui {

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);

    ui::Workbench* workbench() const { return m_workbench; }
    // Restores geometry, layout and the last config (skipped for screenshots and tests).
    void restoreSettings();
    // Opens the run database: `cliPath` (--db), else the last one used, else $MANTISSA_DB
    // or the per-user default. A database that cannot be opened is reported in the window.
    void openDatabase(const QString& cliPath);

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    void buildMenus();
    void showAdvisor();
    // The Runs tab's Advise…: the panel on that run's config and latest state.
    void adviseStoredRun(qint64 runId);
    void saveSettings() const;

    ui::Workbench* m_workbench;
    ui::AdvisorPanel* m_advisor = nullptr; // made when first asked for
};

} // namespace mantissa::gui
