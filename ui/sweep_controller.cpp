#include "ui/sweep_controller.h"

#include "engine/util/check.h"
#include "storage/run_store.h"
#include "sweep/sweep_launch.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QThread>

namespace mantissa::ui {

SweepController::SweepController(QObject* parent)
    : QObject(parent),
      m_workerProgram(QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("mantissa-cli")))
{}

SweepController::~SweepController() = default;

bool SweepController::isRunning() const { return m_runner && m_runner->isRunning(); }

sweep::SweepProgress SweepController::progress() const
{
    return m_runner ? m_runner->progress() : sweep::SweepProgress{};
}

bool SweepController::start(storage::RunStore& store, const SweepSpec& spec, int jobs, QString* error)
{
    const auto fail = [error](const QString& message) {
        if (error)
            *error = message;
        return false;
    };
    if (isRunning())
        return fail(tr("a sweep is already running"));
    if (!QFileInfo(m_workerProgram).isExecutable())
        return fail(tr("%1 is missing or not executable: sweeps train their runs in mantissa-cli worker processes; "
                       "install it beside the GUI")
                        .arg(m_workerProgram));
    sweep::LaunchedSweep launched;
    try {
        SweepPlan plan = expandSweep(spec, "sweep"); // every run checked before anything is written
        launched = sweep::launchSweep(store, spec, std::move(plan), false);
    } catch (const std::exception& e) {
        return fail(QString::fromLocal8Bit(e.what()));
    }
    const int cores = QThread::idealThreadCount();
    const sweep::Parallelism parallel =
        sweep::chooseParallelism(jobs > 0 ? jobs : cores, 0, int(launched.missing.size()), cores);
    sweep::SweepRunnerOptions options;
    options.jobs = parallel.jobs;
    options.threads = parallel.threads;
    options.workerProgram = m_workerProgram;
    options.lowPriority = true; // the window must keep responding on the same cores
    m_sweepId = launched.info.id;
    m_runner = std::make_unique<sweep::SweepRunner>(store.path(), m_sweepId, launched.plan);
    connect(m_runner.get(), &sweep::SweepRunner::progressChanged, this, &SweepController::progressChanged);
    connect(m_runner.get(), &sweep::SweepRunner::runEnded, this, &SweepController::runEnded);
    connect(m_runner.get(), &sweep::SweepRunner::finished, this,
            [this](const sweep::SweepProgress& progress) { emit finished(m_sweepId, progress); });
    emit started(m_sweepId, int(launched.missing.size()), launched.resumed);
    try {
        m_runner->start(launched.missing, options);
    } catch (const std::exception& e) {
        m_runner.reset();
        return fail(QString::fromLocal8Bit(e.what()));
    }
    return true;
}

void SweepController::stop()
{
    if (m_runner)
        m_runner->stop();
}

} // namespace mantissa::ui
