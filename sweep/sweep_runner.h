#pragma once
// Runs runs of a sweep on this machine: up to `jobs` worker processes at once (`mantissa-cli
// sweep-worker`), each with `threads` CPU threads, all recording into the same run database.
// Asynchronous: it works from the event loop of the thread that created it (the GUI's, or a
// QEventLoop in the CLI), so a GUI stays responsive, and reports through signals.
//
// A worker that crashes or is killed leaves its run "interrupted" (marked at once); one that
// fails before its run exists (or cannot be started) gets a "failed" run with the worker's
// message; either way the sweep goes on, and the next launch redoes those runs. stop() asks
// the running workers to stop at a step boundary (SIGINT: their runs end "stopped") and
// starts no more. Workers die with this process (PR_SET_PDEATHSIG), so a killed sweep leaves
// no orphan training a run the sweep no longer records.
#include "engine/sweep/sweep_spec.h"

#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QStringList>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <vector>

class QProcess;

namespace mantissa::storage {
class RunStore;
}

namespace mantissa::sweep {

struct SweepRunnerOptions {
    int jobs = 1;
    int threads = 1; // per job
    // The program that trains one run; `sweep-worker --db ... --sweep ... --index ...` is
    // appended to `workerArguments`.
    QString workerProgram;
    QStringList workerArguments{QStringLiteral("sweep-worker")};
    // Workers at a lower scheduling priority (nice 10), so that a GUI on the same cores keeps
    // responding while they train.
    bool lowPriority = false;
};

struct SweepProgress {
    int total = 0, done = 0, running = 0;
    int finished = 0, diverged = 0, failed = 0, interrupted = 0; // interrupted: also stopped
    int notStarted = 0;                                          // after stop()
    std::optional<double> etaSeconds;
    // "done 3/8, running 2, failed 0, ETA 1:05"
    QString text() const;
};

// How one run's worker ended.
struct SweepRunEnd {
    int index = 0;
    QString status; // finished, diverged, failed, interrupted, stopped
    QString detail; // "test accuracy 81.2%", the worker's error, ...
    double seconds = 0;
};

class SweepRunner : public QObject {
    Q_OBJECT
public:
    // Opens its own connection to the database (the runner may outlive the caller's store).
    SweepRunner(const QString& databasePath, qint64 sweepId, SweepPlan plan, QObject* parent = nullptr);
    ~SweepRunner() override;

    // Starts the runs `indices` (connect to the signals first: with nothing to run, finished()
    // comes from here). Throws StorageError when the database cannot be opened.
    void start(const std::vector<int>& indices, const SweepRunnerOptions& options);
    void stop();
    bool isRunning() const { return m_running; }
    bool isStopping() const { return m_stopping; }
    qint64 sweepId() const { return m_sweepId; }
    const SweepPlan& plan() const { return m_plan; }
    SweepProgress progress() const;

signals:
    void runStarted(int index);
    void runEnded(const mantissa::sweep::SweepRunEnd& end);
    void progressChanged(const mantissa::sweep::SweepProgress& progress);
    void finished(const mantissa::sweep::SweepProgress& progress);

private:
    struct Worker {
        int index = 0;
        qint64 newestRunBefore = 0; // runs with a larger id were created by this worker
        QElapsedTimer clock;
    };
    void startWorkers();
    void onWorkerEnded(QProcess* process, bool failedToStart);
    void recordFailure(const Worker& worker, const QString& message);
    void count(const QString& status);

    QString m_databasePath;
    qint64 m_sweepId;
    SweepPlan m_plan;
    std::unique_ptr<storage::RunStore> m_store;
    SweepRunnerOptions m_options;
    std::deque<int> m_queue;
    std::map<QProcess*, Worker> m_workers;
    QElapsedTimer m_clock;
    SweepProgress m_progress;
    bool m_running = false;
    bool m_stopping = false;
};

} // namespace mantissa::sweep
