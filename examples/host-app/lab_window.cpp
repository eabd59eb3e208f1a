#include "lab_window.h"

#include "ui/workbench_widget.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QLabel>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QSettings>
#include <QSplitter>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTime>
#include <QVBoxLayout>

using mantissa::WorkbenchWidget;

namespace {

QString readResource(const QString& path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? QString::fromUtf8(file.readAll()) : QString();
}

} // namespace

LabWindow::LabWindow(const QString& databasePath, QWidget* parent)
    : QMainWindow(parent), m_workbench(new WorkbenchWidget), m_journal(new QListWidget), m_progress(new QProgressBar),
      m_result(new QLabel(tr("No run yet.")))
{
    setWindowTitle(tr("Lab — experiments with Mantissa inside"));

    // The lab's own panel, left of the workbench.
    auto* notebook = new QWidget;
    auto* layout = new QVBoxLayout(notebook);
    auto* heading = new QLabel(tr("<b>Lab notebook</b>"));
    m_result->setWordWrap(true);
    m_progress->setFormat(tr("step %v of %m"));
    m_progress->setValue(0);
    m_journal->setObjectName("journal");
    m_journal->setWordWrap(true);
    layout->addWidget(heading);
    layout->addWidget(m_result);
    layout->addWidget(m_progress);
    layout->addWidget(m_journal, 1);
    auto* splitter = new QSplitter;
    splitter->addWidget(notebook);
    splitter->addWidget(m_workbench);
    splitter->setStretchFactor(1, 1);
    splitter->setSizes({360, 1240});
    setCentralWidget(splitter);

    connectWorkbench();
    buildMenus();

    QString error;
    if (!m_workbench->addPreset(kPreset, readResource(QStringLiteral(":/presets/quick-mlp.json")), &error))
        note(tr("The lab's preset is broken: %1").arg(error));
    else
        m_workbench->loadPreset(kPreset);
    if (!m_workbench->setDatabasePath(databasePath, &m_databaseError))
        note(tr("Runs are not recorded: %1").arg(m_databaseError));
    else
        note(tr("Recording runs in %1").arg(QDir::toNativeSeparators(databasePath)));
}

void LabWindow::connectWorkbench()
{
    connect(m_workbench, &WorkbenchWidget::runStarted, this, [this](const mantissa::WorkbenchRun& run) {
        m_progress->setValue(0);
        note(tr("%1 (run %2) started").arg(run.name).arg(run.runId));
    });
    connect(m_workbench, &WorkbenchWidget::stepsRecorded, this, [this](qint64, qint64 step, qint64 total, double) {
        m_progress->setMaximum(static_cast<int>(total));
        m_progress->setValue(static_cast<int>(step));
    });
    connect(m_workbench, &WorkbenchWidget::overflowed, this,
            [this](qint64, qint64 step, double before, double after, const QString& parameter) {
                note(
                    tr("step %1 overflowed in %2: loss scale %3 → %4").arg(step).arg(parameter).arg(before).arg(after));
            });
    connect(m_workbench, &WorkbenchWidget::runFinished, this, [this](const mantissa::WorkbenchRunResult& result) {
        m_latestRun = result.run.runId;
        const QString accuracy =
            result.epochs > 0 ? QString::number(100 * result.testAccuracy, 'f', 1) + "%" : tr("not evaluated");
        m_result->setText(tr("Latest: %1, %2 after %3 steps (%4 skipped); test accuracy %5")
                              .arg(result.run.name, QString::fromLatin1(mantissa::runStatusName(result.status)))
                              .arg(result.steps)
                              .arg(result.skippedSteps)
                              .arg(accuracy));
        note(tr("%1 %2").arg(result.run.name, QString::fromLatin1(mantissa::runStatusName(result.status))));
    });
    connect(m_workbench, &WorkbenchWidget::runFailed, this,
            [this](const mantissa::WorkbenchRun& run, const QString& why) {
                note(tr("%1 failed: %2").arg(run.name, why));
            });
    connect(m_workbench, &WorkbenchWidget::reportExported, this,
            [this](const QStringList& files) { note(tr("Report written: %1").arg(files.join(", "))); });
    connect(m_workbench, &WorkbenchWidget::reportFailed, this,
            [this](const QString& why) { note(tr("Report failed: %1").arg(why)); });
}

void LabWindow::buildMenus()
{
    QMenu* lab = menuBar()->addMenu(tr("&Lab"));
    lab->addAction(tr("Export latest report…"), this, &LabWindow::exportLatestReport);
    lab->addSeparator();
    lab->addAction(tr("Quit"), QKeySequence::Quit, this, &QWidget::close);

    QMenu* experiment = menuBar()->addMenu(tr("&Experiment"));
    experiment->addMenu(m_workbench->presetsMenu());
    experiment->addSeparator();
    for (auto action : {WorkbenchWidget::Action::Run, WorkbenchWidget::Action::Pause, WorkbenchWidget::Action::Stop,
                        WorkbenchWidget::Action::ComparePrecisions})
        experiment->addAction(m_workbench->action(action));

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("About Lab"), this, [this] {
        QMessageBox::about(this, tr("About Lab"),
                           tr("An example host application for the Mantissa workbench (examples/host-app)."));
    });
}

void LabWindow::exportLatestReport()
{
    if (m_latestRun <= 0) {
        note(tr("Train a recorded run first"));
        return;
    }
    const QString path = QFileDialog::getSaveFileName(this, tr("Export report"), "lab-report.html",
                                                      tr("Reports (*.html *.pdf *.md *.csv)"));
    QString error;
    if (!path.isEmpty() && !m_workbench->exportReport({m_latestRun}, path, &error))
        note(tr("Report failed: %1").arg(error));
}

void LabWindow::note(const QString& line)
{
    m_journal->addItem(QTime::currentTime().toString("HH:mm:ss  ") + line);
    m_journal->scrollToBottom();
    statusBar()->showMessage(line, 5000);
}

void LabWindow::restoreSettings()
{
    QSettings settings;
    restoreGeometry(settings.value("window/geometry").toByteArray());
    settings.beginGroup("workbench");
    m_workbench->restoreSettings(settings);
}

void LabWindow::saveSettings() const
{
    QSettings settings;
    settings.setValue("window/geometry", saveGeometry());
    settings.beginGroup("workbench");
    m_workbench->saveSettings(settings);
}

void LabWindow::closeEvent(QCloseEvent* event)
{
    saveSettings();
    event->accept();
}

QString LabWindow::defaultDatabasePath()
{
    const QString directory = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    QDir().mkpath(directory);
    return directory + "/experiments.sqlite";
}
