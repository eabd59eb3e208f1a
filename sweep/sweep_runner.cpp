#include "sweep/sweep_runner.h"

#include "engine/config/run_config.h"
#include "engine/observe/task_metric.h"
#include "storage/run_store.h"
#include "storage/storage_error.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

#include <cmath>
#include <csignal>
#include <sys/prctl.h>
#include <unistd.h>

namespace mantissa::sweep {

namespace {

qint64 newestRunId(const storage::RunStore& store)
{
    storage::RunFilter filter;
    filter.limit = 1;
    const QList<storage::RunInfo> runs = store.listRuns(filter);
    return runs.isEmpty() ? 0 : runs.front().id;
}

QString lastLine(const QByteArray& text)
{
    const QList<QByteArray> lines = text.trimmed().split('\n');
    return lines.isEmpty() ? QString() : QString::fromUtf8(lines.back()).trimmed();
}

// The task's metric from a worker's JSON summary line (cli/recorded_run.cpp): "test RMSE 16.42",
// "test 2.314 bits per character", "test accuracy 84.10%"; empty when the line has none.
QString testMetricText(const QJsonObject& summary)
{
    const auto number = [&](const char* key) {
        const QJsonValue value = summary.value(QLatin1String(key));
        return value.isDouble() ? value.toDouble() : NAN;
    };
    if (const double rmse = number("test_rmse"); std::isfinite(rmse))
        return QStringLiteral("test RMSE ") + QString::fromStdString(formatTaskMetric(TaskMetric::Rmse, rmse));
    if (const double bits = number("test_bits_per_character"); std::isfinite(bits))
        return QStringLiteral("test %1 bits per character")
            .arg(QString::fromStdString(formatTaskMetric(TaskMetric::BitsPerCharacter, bits)));
    if (const double accuracy = number("test_accuracy"); std::isfinite(accuracy))
        return QStringLiteral("test accuracy %1%").arg(accuracy * 100, 0, 'f', 2);
    return {};
}

// "12 s", "1:05", "1:02:03"
QString durationText(double seconds)
{
    if (seconds < 60)
        return QStringLiteral("%1 s").arg(seconds, 0, 'f', 0);
    const auto total = static_cast<qint64>(std::llround(seconds));
    const QString minutesSeconds = QStringLiteral("%1:%2")
                                       .arg((total / 60) % 60, total >= 3600 ? 2 : 1, 10, QChar(u'0'))
                                       .arg(total % 60, 2, 10, QChar(u'0'));
    return total >= 3600 ? QStringLiteral("%1:%2").arg(total / 3600).arg(minutesSeconds) : minutesSeconds;
}

} // namespace

QString SweepProgress::text() const
{
    QString text =
        QStringLiteral("done %1/%2, running %3, failed %4").arg(done).arg(total).arg(running).arg(failed + interrupted);
    if (etaSeconds)
        text += QStringLiteral(", ETA %1").arg(durationText(*etaSeconds));
    return text;
}

SweepRunner::SweepRunner(const QString& databasePath, qint64 sweepId, SweepPlan plan, QObject* parent)
    : QObject(parent), m_databasePath(databasePath), m_sweepId(sweepId), m_plan(std::move(plan))
{}

SweepRunner::~SweepRunner()
{
    // Workers die with the process anyway (PR_SET_PDEATHSIG); a runner destroyed before then
    // (a GUI switching databases) must not leave them training unobserved.
    for (const auto& [process, worker] : m_workers) {
        process->disconnect(this);
        process->kill();
        process->waitForFinished(2000);
        delete process;
    }
}

void SweepRunner::start(const std::vector<int>& indices, const SweepRunnerOptions& options)
{
    storage::StoreOptions storeOptions;
    storeOptions.quickCheck = false; // the caller's store has just checked the file
    m_store = std::make_unique<storage::RunStore>(m_databasePath, storeOptions);
    m_options = options;
    m_queue.assign(indices.begin(), indices.end());
    m_progress = {};
    m_progress.total = int(indices.size());
    m_stopping = false;
    m_running = true;
    m_clock.start();
    startWorkers();
}

void SweepRunner::stop()
{
    if (!m_running || m_stopping)
        return;
    m_stopping = true;
    m_progress.notStarted = int(m_queue.size());
    m_queue.clear();
    for (const auto& [process, worker] : m_workers)
        ::kill(pid_t(process->processId()), SIGINT);
    if (m_workers.empty())
        startWorkers(); // ends the sweep
    else
        emit progressChanged(progress());
}

SweepProgress SweepRunner::progress() const
{
    SweepProgress p = m_progress;
    p.running = int(m_workers.size());
    const int left = int(m_queue.size()) + p.running;
    // The parallelism is already in the elapsed time per completed run.
    if (p.done > 0 && left > 0)
        p.etaSeconds = m_clock.elapsed() / 1000.0 / p.done * left;
    return p;
}

void SweepRunner::startWorkers()
{
    while (int(m_workers.size()) < m_options.jobs && !m_queue.empty()) {
        const int index = m_queue.front();
        m_queue.pop_front();
        auto* process = new QProcess;
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        // Also for libraries that read their own variable before the engine sets threads.
        environment.insert(QStringLiteral("OMP_NUM_THREADS"), QString::number(m_options.threads));
        process->setProcessEnvironment(environment);
        const bool lowPriority = m_options.lowPriority;
        process->setChildProcessModifier([lowPriority] {
            // A worker must not outlive a killed sweep: its run would go on unrecorded by the
            // sweep, and a restarted sweep would train it a second time.
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (lowPriority) {
                [[maybe_unused]] const int niceness = ::nice(10);
            }
        });
        Worker worker;
        worker.index = index;
        worker.newestRunBefore = newestRunId(*m_store);
        worker.clock.start();
        m_workers.emplace(process, worker);
        connect(process, &QProcess::finished, this, [this, process] { onWorkerEnded(process, false); });
        connect(process, &QProcess::errorOccurred, this, [this, process](QProcess::ProcessError error) {
            if (error == QProcess::FailedToStart)
                onWorkerEnded(process, true);
        });
        process->start(m_options.workerProgram,
                       m_options.workerArguments +
                           QStringList{QStringLiteral("--db"), m_store->path(), QStringLiteral("--sweep"),
                                       QString::number(m_sweepId), QStringLiteral("--index"), QString::number(index),
                                       QStringLiteral("--threads"), QString::number(m_options.threads)});
        emit runStarted(index);
    }
    emit progressChanged(progress());
    if (m_workers.empty() && m_running) {
        m_running = false;
        m_store.reset();
        emit finished(progress());
    }
}

void SweepRunner::onWorkerEnded(QProcess* process, bool failedToStart)
{
    const auto it = m_workers.find(process);
    if (it == m_workers.end())
        return;
    const Worker worker = it->second;
    m_workers.erase(it);
    process->deleteLater();
    SweepRunEnd end;
    end.index = worker.index;
    end.seconds = worker.clock.elapsed() / 1000.0;
    if (failedToStart) {
        end.status = QStringLiteral("failed");
        end.detail = QStringLiteral("cannot start %1: %2").arg(m_options.workerProgram, process->errorString());
        recordFailure(worker, end.detail);
    } else if (process->exitStatus() == QProcess::CrashExit) {
        // Its run (if it had started one) has a dead writer: mark it now, not at the next open.
        m_store->markInterruptedRuns();
        end.status = QStringLiteral("interrupted");
        end.detail = QStringLiteral("the worker crashed or was killed");
    } else {
        const QJsonObject summary =
            QJsonDocument::fromJson(lastLine(process->readAllStandardOutput()).toUtf8()).object();
        end.status = summary.value(QStringLiteral("status")).toString();
        if (end.status.isEmpty()) {
            end.status = QStringLiteral("failed");
            end.detail = lastLine(process->readAllStandardError());
            recordFailure(worker, end.detail);
        } else {
            end.detail = testMetricText(summary);
            if (summary.contains(QStringLiteral("message")))
                end.detail += (end.detail.isEmpty() ? QString() : QStringLiteral("; ")) +
                              summary.value(QStringLiteral("message")).toString();
        }
    }
    count(end.status);
    ++m_progress.done;
    emit runEnded(end);
    startWorkers();
}

// The worker failed before it created its run (a missing dataset, an unusable device): the
// sweep records the failure as a run so that it shows, with the worker's message.
void SweepRunner::recordFailure(const Worker& worker, const QString& message)
{
    try {
        for (const storage::RunInfo& run : m_store->sweepRuns(m_sweepId))
            if (run.sweepIndex == worker.index && run.id > worker.newestRunBefore)
                return; // the worker got as far as its run, which says how it ended
        const SweepRun& run = m_plan.runs[std::size_t(worker.index)];
        storage::NewRun row;
        row.configJson = QString::fromStdString(runConfigToJson(run.config));
        row.preset = QString::fromStdString(run.config.name);
        row.precision = QString::fromStdString(precisionModeName(run.config.precision));
        row.sweepId = m_sweepId;
        row.sweepIndex = worker.index;
        const qint64 id = m_store->createRun(row);
        RunSummary summary;
        summary.status = RunStatus::Failed;
        summary.message = message.isEmpty() ? "the worker failed without a message" : message.toStdString();
        m_store->finishRun(id, summary);
    } catch (const storage::StorageError& error) {
        qWarning("could not record the failure of run %d: %s", worker.index, error.what());
    }
}

void SweepRunner::count(const QString& status)
{
    if (status == QLatin1String("finished"))
        ++m_progress.finished;
    else if (status == QLatin1String("diverged"))
        ++m_progress.diverged;
    else if (status == QLatin1String("failed"))
        ++m_progress.failed;
    else
        ++m_progress.interrupted; // interrupted, stopped
}

} // namespace mantissa::sweep
