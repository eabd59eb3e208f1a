#include "cli/study_forks.h"

#include "cli/interrupt.h"
#include "storage/run_store.h"

#include <QCoreApplication>
#include <QProcess>

#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdio>
#include <deque>
#include <memory>
#include <sys/prctl.h>

namespace mantissa::cli {

namespace {

struct RunningFork {
    const sweep::ForkTask* task = nullptr;
    std::unique_ptr<QProcess> process;
};

// The fork gets the store's usual name (names are unique, and a retried fork needs a new
// one); its tag is what keys it.
QStringList forkArguments(const storage::RunStore& store, const sweep::ForkTask& task, int threads)
{
    QStringList arguments{QStringLiteral("fork"),  QString::number(task.parent->id),
                          QStringLiteral("--at"),  QString::number(task.arm->step),
                          QStringLiteral("--db"),  store.path(),
                          QStringLiteral("--set"), QStringLiteral("training.threads=%1").arg(threads)};
    for (const auto& setting : task.arm->settings)
        arguments << QStringLiteral("--set") << QString::fromStdString(sweep::forkSettingText(setting));
    return arguments;
}

// The run id from the fork's JSON summary line (its last line on stdout).
std::optional<qint64> runIdOf(const QByteArray& stdoutText)
{
    const QList<QByteArray> lines = stdoutText.trimmed().split('\n');
    if (lines.isEmpty())
        return std::nullopt;
    const nlohmann::json line = nlohmann::json::parse(lines.last().toStdString(), nullptr, false);
    if (line.is_discarded() || !line.contains("run_id") || !line["run_id"].is_number_integer())
        return std::nullopt;
    return line["run_id"].get<qint64>();
}

QString lastLine(const QByteArray& text)
{
    const QList<QByteArray> lines = text.trimmed().split('\n');
    return lines.isEmpty() ? QString() : QString::fromUtf8(lines.last()).trimmed();
}

} // namespace

StudyForkOutcome runStudyForks(storage::RunStore& store, const sweep::StudySpec& spec,
                               const std::vector<sweep::ForkTask>& tasks, int jobs, int threads)
{
    StudyForkOutcome outcome;
    std::deque<const sweep::ForkTask*> queue;
    for (const sweep::ForkTask& task : tasks)
        if (!task.done() && task.parent && task.parent->status == RunStatus::Finished)
            queue.push_back(&task); // a diverged parent has no state to continue
    std::vector<RunningFork> running;
    bool stopping = false;
    const int total = int(queue.size());
    while (!queue.empty() || !running.empty()) {
        if (InterruptHandler::interrupted() && !stopping) {
            stopping = true;
            outcome.notStarted = int(queue.size());
            queue.clear();
            std::fprintf(stderr, "\ninterrupted: stopping %zu running fork(s); %d not started\n", running.size(),
                         outcome.notStarted);
            for (RunningFork& fork : running)
                ::kill(pid_t(fork.process->processId()), SIGINT);
        }
        while (!stopping && int(running.size()) < jobs && !queue.empty()) {
            RunningFork fork{queue.front(), std::make_unique<QProcess>()};
            queue.pop_front();
            fork.process->setProgram(QCoreApplication::applicationFilePath());
            fork.process->setArguments(forkArguments(store, *fork.task, threads));
            // A fork must not outlive a killed study (as a sweep's workers do not).
            fork.process->setChildProcessModifier([] { ::prctl(PR_SET_PDEATHSIG, SIGKILL); });
            fork.process->start();
            running.push_back(std::move(fork));
        }
        for (auto it = running.begin(); it != running.end();) {
            if (it->process->state() != QProcess::NotRunning && !it->process->waitForFinished(100)) {
                ++it;
                continue;
            }
            const sweep::ForkTask& task = *it->task;
            const QByteArray out = it->process->readAllStandardOutput(), err = it->process->readAllStandardError();
            const std::optional<qint64> runId = runIdOf(out);
            ++outcome.ran;
            QString status;
            if (runId) {
                store.addTag(*runId, QString::fromStdString(sweep::studyForkTag(spec, task.arm->name, task.seed)));
                const storage::RunInfo run = store.run(*runId);
                status = QString::fromUtf8(runStatusName(run.status));
                if (run.status == RunStatus::Finished || run.status == RunStatus::Diverged)
                    ++outcome.results;
                else
                    ++outcome.failed;
            } else {
                ++outcome.failed;
                status = QStringLiteral("failed: ") + lastLine(err);
            }
            std::fprintf(stderr, "[fork %d/%d] %s seed %llu (from run %lld at step %lld): %s\n", outcome.ran, total,
                         task.arm->name.c_str(), static_cast<unsigned long long>(task.seed),
                         static_cast<long long>(task.parent->id), static_cast<long long>(task.arm->step),
                         qPrintable(status));
            std::fflush(stderr);
            it = running.erase(it);
        }
    }
    return outcome;
}

} // namespace mantissa::cli
