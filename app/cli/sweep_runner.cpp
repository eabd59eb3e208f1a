#include "cli/sweep_runner.h"

#include "cli/interrupt.h"
#include "cli/run_format.h"
#include "sweep/sweep_runner.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTimer>

#include <cstdio>

namespace mantissa::cli {

namespace {

class TerminalProgress {
public:
    explicit TerminalProgress(bool interactive) : m_interactive(interactive) { m_clock.start(); }

    void showStatus(const sweep::SweepProgress& progress)
    {
        if (!m_interactive || m_clock.elapsed() - m_lastStatus < 1000)
            return;
        m_lastStatus = m_clock.elapsed();
        std::fprintf(stderr, "\r\033[K%s", qPrintable(progress.text()));
        std::fflush(stderr);
        m_visible = true;
    }

    void clear()
    {
        if (m_visible)
            std::fputs("\r\033[K", stderr);
        m_visible = false;
    }

private:
    bool m_interactive;
    QElapsedTimer m_clock;
    qint64 m_lastStatus = -1000;
    bool m_visible = false;
};

} // namespace

SweepRunOutcome runSweepLocally(const QString& databasePath, qint64 sweepId, const SweepPlan& plan,
                                const std::vector<int>& indices, const SweepRunnerOptions& options)
{
    if (indices.empty())
        return {};
    sweep::SweepRunner runner(databasePath, sweepId, plan);
    TerminalProgress terminal(options.interactive);
    QEventLoop loop;
    sweep::SweepProgress last;
    QObject::connect(&runner, &sweep::SweepRunner::runEnded, [&](const sweep::SweepRunEnd& end) {
        terminal.clear();
        const sweep::SweepProgress progress = runner.progress();
        const SweepRun& run = plan.runs[std::size_t(end.index)];
        std::fprintf(stderr, "[%d/%d] run %d (%s): %s%s%s, %s\n", progress.done, progress.total, end.index,
                     run.label.c_str(), qPrintable(end.status), end.detail.isEmpty() ? "" : ", ",
                     qPrintable(end.detail), qPrintable(formatSeconds(end.seconds)));
        std::fprintf(stderr, "  %s\n", qPrintable(progress.text()));
        std::fflush(stderr);
    });
    QObject::connect(&runner, &sweep::SweepRunner::finished, [&](const sweep::SweepProgress& progress) {
        last = progress;
        loop.quit();
    });
    QTimer tick;
    QObject::connect(&tick, &QTimer::timeout, [&] {
        if (InterruptHandler::interrupted() && !runner.isStopping()) {
            const int running = runner.progress().running;
            runner.stop();
            std::fprintf(stderr, "\ninterrupted: stopping %d running run(s); %d not started\n", running,
                         runner.progress().notStarted);
        }
        terminal.showStatus(runner.progress());
    });
    tick.start(100);
    sweep::SweepRunnerOptions runnerOptions;
    runnerOptions.jobs = options.jobs;
    runnerOptions.threads = options.threads;
    runnerOptions.workerProgram = QCoreApplication::applicationFilePath();
    runner.start(indices, runnerOptions);
    if (runner.isRunning())
        loop.exec();
    terminal.clear();
    return {last.finished, last.diverged, last.failed, last.interrupted, last.notStarted};
}

} // namespace mantissa::cli
