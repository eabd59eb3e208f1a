#pragma once
// RunWriter: persists one run's step, epoch and event records as the trainer produces
// them. It lives on the training thread: construct it there (it opens its own SQLite
// connection, which belongs to that thread) and install it as the trainer's observer.
//
// Rows are buffered and committed in one transaction when a second has passed since the
// last commit (checked on every step), when the buffer is full, and at once for an
// epoch, an event, a checkpoint, flush() and finish(). Nothing is pending for more than
// a second while steps keep arriving; a trainer that blocks (pause) should flush() first.
//
// The observer callbacks never throw into the trainer. A failure (disk full, a lock held
// past the timeout three commits running, a broken file) is recorded: failed() turns
// true, errorMessage() says why, further rows are dropped, and the run is marked
// "failed" with that message when the database still accepts the update. The trainer
// checks failed() and stops.
#include "engine/observe/records.h"
#include "storage/run_types.h"

#include <QSqlQuery>
#include <QString>

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

namespace mantissa::storage {

class Connection;
struct FinishedRow;

struct WriterOptions {
    int busyTimeoutMs = 5000;
    int commitIntervalMs = 1000;  // the longest a step row waits while steps keep coming
    int maxBufferedSteps = 32768; // commit early when this many rows wait (bounds memory)
};

class RunWriter final : public TrainingObserver {
public:
    // Claims run `runId` (created by RunStore::createRun, still "running") for this
    // process. Throws StorageError if the database cannot be opened or the run does not
    // exist or has already ended.
    RunWriter(const QString& databasePath, qint64 runId, const WriterOptions& options = {});
    // Commits what is buffered. A run never finished is marked "interrupted": the
    // trainer unwound (an exception) or its owner forgot finish(). After a failure it
    // tries once more to mark the run "failed" (a lock may have gone meanwhile).
    ~RunWriter() override;
    RunWriter(const RunWriter&) = delete;
    RunWriter& operator=(const RunWriter&) = delete;

    void onStep(const StepRecord& step) override;
    void onEpoch(const EpochRecord& epoch) override;
    void onEvent(const EventRecord& event) override;
    // Buffered like steps: committed with them (a sampled step's rows arrive every N steps).
    void onNumerics(const NumericsRecord& numerics) override;
    // Buffered like numerics.
    void onShadow(const ShadowRecord& shadow) override;
    // Records a checkpoint file written by the trainer (stored relative to the database).
    void addCheckpoint(const QString& filePath, qint64 step, int epoch);

    // Commits the buffered rows now. Returns !failed().
    bool flush();
    // Commits the buffered rows and the run's final row in one transaction. Summary fields
    // the engine's summary leaves unknown (see finishedRow() in run_sql.h) are filled from the
    // records seen (observedSummary()), and an unknown wall time from the last step's or
    // epoch's clock. Returns !failed().
    bool finish(const RunSummary& summary);

    // Safe to call from any thread; errorMessage() is fixed once failed() is true.
    bool failed() const { return m_failed.load(std::memory_order_acquire); }
    QString errorMessage() const;

    qint64 runId() const { return m_runId; }
    qint64 committedSteps() const { return m_committedSteps; }
    qint64 commitCount() const { return m_commitCount; }
    StoredSummary observedSummary() const;

private:
    using Clock = std::chrono::steady_clock;

    void claimRun();
    void prepareStatements();
    void observe(const StepRecord& step);
    void observe(const EpochRecord& epoch);
    void observe(const EventRecord& event);
    bool commit(const FinishedRow* finish);
    void writePending(const FinishedRow* finish);
    void writeSteps();
    void writeNumerics();
    void writeGemmInputs(const NumericsRecord& record, const QString& what);
    void writeShadows();
    void fail(const QString& message);
    bool markRunEnded(RunStatus status, const QString& message);
    void rollback();

    // Declared first so it is destroyed last: the queries below must go before it.
    std::unique_ptr<Connection> m_connection;
    qint64 m_runId;
    WriterOptions m_options;
    QString m_databaseDirectory;

    static constexpr int kRowsPerInsert = 64; // rows per multi-row INSERT: fewer statement executions
    QSqlQuery m_insertSteps;                  // kRowsPerInsert rows
    QSqlQuery m_insertStep;                   // one row
    QSqlQuery m_insertEpoch, m_insertEvent, m_insertCheckpoint, m_heartbeat;
    QSqlQuery m_insertNumericsStep, m_insertNumericsTensor, m_insertGemmInput;
    QSqlQuery m_insertShadowStep, m_insertShadowError;
    QSqlQuery m_begin, m_commit, m_rollback;

    struct PendingCheckpoint {
        QString path;
        qint64 step = 0;
        int epoch = 0;
        QString createdAt;
    };
    std::vector<StepRecord> m_steps;
    std::vector<EpochRecord> m_epochs;
    std::vector<EventRecord> m_events;
    std::vector<NumericsRecord> m_numerics;
    std::vector<ShadowRecord> m_shadows;
    std::vector<PendingCheckpoint> m_checkpoints;
    Clock::time_point m_lastCommit;
    int m_lockedCommits = 0; // consecutive commits that found the database locked

    std::atomic<bool> m_failed{false};
    QString m_errorMessage; // written once, before m_failed turns true
    bool m_finished = false;
    bool m_failureRecorded = false; // the run row says "failed"
    qint64 m_committedSteps = 0;
    qint64 m_commitCount = 0;

    // What observedSummary() reports.
    qint64 m_lastStep = 0, m_skippedSteps = 0;
    float m_lastStepLoss = 0;
    double m_lastElapsedSeconds = 0; // wall time if finish() is given none
    std::optional<double> m_finalLossScale;
    qint64 m_finalLossScaleStep = 0;
    double m_inverseRateSum = 0;
    qint64 m_rateCount = 0;
    std::optional<double> m_finalTrainLoss, m_bestTestAccuracy, m_finalTestAccuracy, m_finalTestLoss, m_bestTestLoss;
};

} // namespace mantissa::storage
