#include "cli/sweep_runner.h"

#include "cli/interrupt.h"
#include "cli/run_format.h"
#include "storage/storage_error.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTimer>

#include <csignal>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <sys/prctl.h>

namespace mantissa::cli {

namespace {

struct Worker {
    int index = 0;
    qint64 newestRunBefore = 0; // runs with a larger id were created by this worker
    QElapsedTimer clock;
};

qint64 newestRunId(const storage::RunStore& store)
{
    storage::RunFilter filter;
    filter.limit = 1;
    const QList<storage::RunInfo> runs = store.listRuns(filter);
    return runs.isEmpty() ? 0 : runs.front().id;
}

// The run a worker created, if it got that far.
std::optional<storage::RunInfo> workerRun(const storage::RunStore& store, qint64 sweepId, const Worker& worker)
{
    std::optional<storage::RunInfo> found;
    for (const storage::RunInfo& run : store.sweepRuns(sweepId))
        if (run.sweepIndex == worker.index && run.id > worker.newestRunBefore)
            found = run;
    return found;
}

QString lastLine(const QByteArray& text)
{
    const QList<QByteArray> lines = text.trimmed().split('\n');
    return lines.isEmpty() ? QString() : QString::fromUtf8(lines.back()).trimmed();
}

class LocalSweep {
public:
    LocalSweep(storage::RunStore& store, qint64 sweepId, const SweepPlan& plan, const std::vector<int>& indices,
               const SweepRunnerOptions& options)
        : m_store(store), m_sweepId(sweepId), m_plan(plan), m_queue(indices.begin(), indices.end()),
          m_total(int(indices.size())), m_options(options)
    {}

    SweepRunOutcome run()
    {
        m_clock.start();
        QTimer tick;
        QObject::connect(&tick, &QTimer::timeout, [this] { onTick(); });
        tick.start(100);
        startWorkers();
        if (!m_workers.empty())
            m_loop.exec();
        clearStatusLine();
        return m_outcome;
    }

private:
    void startWorkers()
    {
        while (int(m_workers.size()) < m_options.jobs && !m_queue.empty() && !InterruptHandler::interrupted()) {
            const int index = m_queue.front();
            m_queue.pop_front();
            auto* process = new QProcess;
            QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
            // Also for libraries that read their own variable before the engine sets threads.
            environment.insert(QStringLiteral("OMP_NUM_THREADS"), QString::number(m_options.threads));
            process->setProcessEnvironment(environment);
            // A worker must not outlive a killed sweep: its run would go on unrecorded by
            // the sweep, and a restarted sweep would train it a second time.
            process->setChildProcessModifier([] { ::prctl(PR_SET_PDEATHSIG, SIGKILL); });
            Worker worker;
            worker.index = index;
            worker.newestRunBefore = newestRunId(m_store);
            worker.clock.start();
            m_workers.emplace(process, worker);
            QObject::connect(process, &QProcess::finished, [this, process] { onFinished(process); });
            process->start(QCoreApplication::applicationFilePath(),
                           {QStringLiteral("sweep-worker"), QStringLiteral("--db"), m_store.path(),
                            QStringLiteral("--sweep"), QString::number(m_sweepId), QStringLiteral("--index"),
                            QString::number(index), QStringLiteral("--threads"), QString::number(m_options.threads)});
        }
        if (m_workers.empty())
            m_loop.quit();
    }

    void onFinished(QProcess* process)
    {
        const Worker worker = m_workers.at(process);
        m_workers.erase(process);
        process->deleteLater();
        const QByteArray out = process->readAllStandardOutput();
        const QByteArray err = process->readAllStandardError();
        QString status, detail;
        if (process->exitStatus() == QProcess::CrashExit) {
            // Its run (if it had started one) has a dead writer: mark it now, not at the next open.
            m_store.markInterruptedRuns();
            status = QStringLiteral("interrupted");
            detail = QStringLiteral("the worker crashed or was killed");
        } else {
            const QJsonObject summary = QJsonDocument::fromJson(lastLine(out).toUtf8()).object();
            status = summary.value(QStringLiteral("status")).toString();
            if (status.isEmpty()) {
                status = QStringLiteral("failed");
                detail = lastLine(err);
                recordFailure(worker, detail);
            } else if (summary.contains(QStringLiteral("test_accuracy"))) {
                detail = QStringLiteral("test accuracy %1")
                             .arg(formatPercent(summary.value(QStringLiteral("test_accuracy")).toDouble()));
                if (summary.contains(QStringLiteral("message")))
                    detail += QStringLiteral("; ") + summary.value(QStringLiteral("message")).toString();
            }
        }
        count(status);
        ++m_done;
        clearStatusLine();
        const SweepRun& run = m_plan.runs[std::size_t(worker.index)];
        std::fprintf(stderr, "[%d/%d] run %d (%s): %s%s%s, %s\n", m_done, m_total, worker.index, run.label.c_str(),
                     qPrintable(status), detail.isEmpty() ? "" : ", ", qPrintable(detail),
                     qPrintable(formatSeconds(worker.clock.elapsed() / 1000.0)));
        std::fprintf(stderr, "  %s\n", qPrintable(progressText()));
        std::fflush(stderr);
        startWorkers();
    }

    // The worker failed before it created its run (a missing dataset, an unusable device):
    // the sweep records the failure as a run so that it shows, with the worker's message.
    void recordFailure(const Worker& worker, const QString& message)
    {
        try {
            if (workerRun(m_store, m_sweepId, worker))
                return;
            const SweepRun& run = m_plan.runs[std::size_t(worker.index)];
            storage::NewRun row;
            row.configJson = QString::fromStdString(runConfigToJson(run.config));
            row.preset = QString::fromStdString(run.config.name);
            row.precision = QString::fromStdString(precisionModeName(run.config.precision));
            row.sweepId = m_sweepId;
            row.sweepIndex = worker.index;
            const qint64 id = m_store.createRun(row);
            RunSummary summary;
            summary.status = RunStatus::Failed;
            summary.message = message.isEmpty() ? "the worker failed without a message" : message.toStdString();
            m_store.finishRun(id, summary);
        } catch (const storage::StorageError& error) {
            std::fprintf(stderr, "could not record the failure of run %d: %s\n", worker.index, error.what());
        }
    }

    void count(const QString& status)
    {
        if (status == QLatin1String("finished"))
            ++m_outcome.finished;
        else if (status == QLatin1String("diverged"))
            ++m_outcome.diverged;
        else if (status == QLatin1String("failed"))
            ++m_outcome.failed;
        else
            ++m_outcome.interrupted; // interrupted, stopped
    }

    QString progressText() const
    {
        const int left = int(m_queue.size()) + int(m_workers.size());
        QString text = QStringLiteral("done %1/%2, running %3, failed %4")
                           .arg(m_done)
                           .arg(m_total)
                           .arg(m_workers.size())
                           .arg(m_outcome.failed + m_outcome.interrupted);
        if (m_done > 0 && left > 0) {
            // The parallelism is already in the elapsed time per completed run.
            const double eta = m_clock.elapsed() / 1000.0 / m_done * left;
            text += QStringLiteral(", ETA %1").arg(formatSeconds(eta));
        }
        return text;
    }

    void onTick()
    {
        if (InterruptHandler::interrupted() && !m_stopping) {
            m_stopping = true;
            m_outcome.notStarted = int(m_queue.size());
            m_queue.clear();
            std::fprintf(stderr, "\ninterrupted: stopping %zu running run(s); %d not started\n", m_workers.size(),
                         m_outcome.notStarted);
            for (const auto& [process, worker] : m_workers)
                ::kill(pid_t(process->processId()), SIGINT);
        }
        if (m_options.interactive && m_clock.elapsed() - m_lastStatus >= 1000) {
            m_lastStatus = m_clock.elapsed();
            std::fprintf(stderr, "\r\033[K%s", qPrintable(progressText()));
            std::fflush(stderr);
            m_statusVisible = true;
        }
    }

    void clearStatusLine()
    {
        if (m_statusVisible)
            std::fputs("\r\033[K", stderr);
        m_statusVisible = false;
    }

    storage::RunStore& m_store;
    qint64 m_sweepId;
    const SweepPlan& m_plan;
    std::deque<int> m_queue;
    int m_total;
    SweepRunnerOptions m_options;
    std::map<QProcess*, Worker> m_workers;
    QEventLoop m_loop;
    QElapsedTimer m_clock;
    qint64 m_lastStatus = 0;
    bool m_statusVisible = false;
    bool m_stopping = false;
    int m_done = 0;
    SweepRunOutcome m_outcome;
};

} // namespace

SweepRunOutcome runSweepLocally(storage::RunStore& store, qint64 sweepId, const SweepPlan& plan,
                                const std::vector<int>& indices, const SweepRunnerOptions& options)
{
    if (indices.empty())
        return {};
    LocalSweep sweep(store, sweepId, plan, indices, options);
    return sweep.run();
}

} // namespace mantissa::cli
