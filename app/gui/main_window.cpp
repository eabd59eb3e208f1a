#include "gui/main_window.h"

#include "engine/util/check.h"
#include "storage/database_path.h"
#include "ui/advisor_panel.h"
#include "ui/config_document.h"
#include "ui/run_browser.h"
#include "ui/workbench.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QMenuBar>
#include <QSettings>
#include <QToolBar>

namespace mantissa::gui {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent), m_workbench(new ui::Workbench)
{
    setWindowTitle(tr("Mantissa — mixed-precision training workbench"));
    setCentralWidget(m_workbench);
    buildMenus();
}

void MainWindow::buildMenus()
{
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addMenu(m_workbench->presetsMenu());
    file->addAction(m_workbench->openAction());
    file->addAction(m_workbench->importModelAction());
    file->addAction(m_workbench->saveAction());
    file->addSeparator();
    QAction* quit = file->addAction(tr("Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);
    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    edit->addAction(m_workbench->undoAction());
    edit->addAction(m_workbench->redoAction());
    QMenu* run = menuBar()->addMenu(tr("&Run"));
    run->addAction(m_workbench->runAction());
    run->addAction(m_workbench->pauseAction());
    run->addAction(m_workbench->stopAction());
    run->addSeparator();
    run->addAction(m_workbench->compareAction());
    run->addMenu(m_workbench->comparisonPrecisions()); // the same menu as the button's arrow
    run->addSeparator();
    QAction* advise = new QAction(tr("Advise…"), this);
    advise->setObjectName("adviseAction");
    advise->setToolTip(tr("Which layers of this config can go to a lower format: probe each, choose within a loss "
                          "budget, apply as per-layer formats"));
    connect(advise, &QAction::triggered, this, [this] {
        showAdvisor();
        m_advisor->adviseCurrentConfig();
    });
    run->addAction(advise);
    m_workbench->toolBar()->addAction(advise);
    connect(m_workbench->runBrowser(), &ui::RunBrowser::adviseRequested, this, &MainWindow::adviseStoredRun);
}

void MainWindow::adviseStoredRun(qint64 runId)
{
    showAdvisor();
    if (m_workbench->store())
        m_advisor->adviseStoredRun(*m_workbench->store(), runId); // a run it cannot take is said in the panel
}

void MainWindow::showAdvisor()
{
    if (!m_advisor) {
        m_advisor = new ui::AdvisorPanel(m_workbench->document(), this);
        m_advisor->setWindowFlag(Qt::Window);
        m_advisor->resize(900, 640);
    }
    m_advisor->show();
    m_advisor->raise();
    m_advisor->activateWindow();
}

void MainWindow::restoreSettings()
{
    QSettings settings;
    restoreGeometry(settings.value("window/geometry").toByteArray());
    restoreState(settings.value("window/state").toByteArray());
    m_workbench->restoreLayout(settings.value("workbench/layout").toByteArray());
    const QString json = settings.value("workbench/lastConfig").toString();
    if (!json.isEmpty()) {
        try {
            m_workbench->document()->load(parseRunConfig(json.toStdString(), "the last session's config"),
                                          tr("Restore last config"));
            m_workbench->document()->undoStack()->clear();
        } catch (const Error&) {
            // A config from an older version that no longer parses: start from the preset.
        }
    }
}

void MainWindow::openDatabase(const QString& cliPath)
{
    QString path = cliPath;
    if (path.isEmpty() && qEnvironmentVariableIsEmpty("MANTISSA_DB"))
        path = QSettings().value("storage/databasePath").toString();
    try {
        path = storage::resolveDatabasePath(path);
    } catch (const std::exception& e) {
        qWarning("%s", e.what());
        return;
    }
    m_workbench->setDatabasePath(path); // reports a refusal in the workbench's banner
}

void MainWindow::saveSettings() const
{
    QSettings settings;
    if (!m_workbench->databasePath().isEmpty())
        settings.setValue("storage/databasePath", m_workbench->databasePath());
    settings.setValue("window/geometry", saveGeometry());
    settings.setValue("window/state", saveState());
    settings.setValue("workbench/layout", m_workbench->saveLayout());
    settings.setValue("workbench/lastConfig",
                      QString::fromStdString(runConfigToJson(m_workbench->document()->config())));
}

void MainWindow::closeEvent(QCloseEvent* event)
{
    saveSettings();
    event->accept();
}

} // namespace mantissa::gui
