#pragma once
// RunStore: opens (creating, checking and migrating) a run database and is the API the
// CLI and the GUI use to create, find, read, organise and delete runs. Training rows are
// written by RunWriter on the training thread, through its own connection.
//
// A RunStore owns one QSqlDatabase connection, which belongs to the thread that created
// the store: use it on that thread only, and give every other thread its own RunStore.
// Reads are single statements (no transaction stays open between calls), so readers
// never hold back the writer. Every method throws StorageError on failure.
#include "engine/observe/records.h"
#include "storage/run_types.h"

#include <QList>
#include <QString>

#include <memory>
#include <optional>

namespace mantissa::storage {

class Connection;

struct StoreOptions {
    int busyTimeoutMs = 5000; // how long a statement waits for another writer's lock
    bool quickCheck = true;   // PRAGMA quick_check on open (about 0.1 s per million steps)
};

class RunStore {
public:
    // Opens or creates the database at `path`. Refuses, without modifying it, a file that
    // is not SQLite, another application's database, a corrupt one or one with a newer
    // schema; migrates an older schema forward; marks runs whose writer died "interrupted".
    explicit RunStore(const QString& path, const StoreOptions& options = {});
    ~RunStore();
    RunStore(const RunStore&) = delete;
    RunStore& operator=(const RunStore&) = delete;

    QString path() const;      // absolute path of the database file
    QString directory() const; // checkpoint paths are stored relative to it
    // Where a run's checkpoints go: "<directory>/<file name>-checkpoints/run-<id>", beside the
    // database so that copying the directory keeps them, and named after the file so that two
    // databases in one directory do not share it. Not created here.
    QString checkpointDirectory(qint64 runId) const;
    static int schemaVersion();

    // An imported model's run (RunInfo::modelSha256 set): a file holding the model it trained.
    // Its source when that still holds the same bytes; else the stored copy, written to
    // "<directory>/<file name>-models/<sha256>.onnx" (once; kept for the next time), so that the
    // run can be trained again after its file moved or changed. StorageError when the run has no
    // model file or it cannot be written.
    QString modelFilePath(const RunInfo& run) const;

    // Runs. createRun() records this process as the writer (see RunWriter).
    qint64 createRun(const NewRun& run);
    // Ends a running run with the engine's summary (see finishedRow() in run_sql.h for what
    // is stored as not known). Trainer runs end through RunRecorder, which calls this only
    // when its writer could not.
    void finishRun(qint64 runId, const RunSummary& summary);
    QList<RunInfo> listRuns(const RunFilter& filter = {}) const; // newest first
    RunInfo run(qint64 runId) const;
    // By id ("12") or by unique name ("mlp-mixed-fp16-3"); names are never all digits.
    RunInfo findRun(const QString& idOrName) const;
    void renameRun(qint64 runId, const QString& newName);
    void setNotes(qint64 runId, const QString& notes);
    // Which kernels the run's 16-bit types took (Backend::kernelPaths): the plan when the run
    // is created, the implementations actually used when it ends.
    void setKernels(qint64 runId, const QString& kernels);
    void addTag(qint64 runId, const QString& tag);    // adding a present tag does nothing
    void removeTag(qint64 runId, const QString& tag); // removing an absent tag does nothing
    // Deletes the run's rows, then its checkpoint files; returns the files that could not
    // be removed. Refuses a run whose writer is still alive.
    QStringList deleteRun(qint64 runId);
    // Marks "running" runs whose writer is gone as "interrupted" (done on open; the GUI
    // may call it again). Returns how many were marked.
    int markInterruptedRuns();

    // Rows of a run. steps() returns those with step > afterStep, so a plot can poll for
    // new rows only.
    StepSeries steps(qint64 runId, qint64 afterStep = 0) const;
    QList<EpochRecord> epochs(qint64 runId) const;
    QList<EventRecord> events(qint64 runId) const;
    // A data-parallel run's ranks in rank order (run_ranks): empty for a single process, a
    // run still training, or one that failed.
    QList<RankThroughput> rankThroughput(qint64 runId) const;
    QList<CheckpointInfo> checkpoints(qint64 runId) const;

    // The numerics lens (RunConfig::numerics). Sampled steps in ascending order; the
    // per-layer statistics of one of them (NotFound when `step` was not sampled); one
    // tensor's histograms over all sampled steps, e.g. ("1.linear.weight", WeightGrad).
    QList<qint64> numericsSteps(qint64 runId) const;
    NumericsRecord numerics(qint64 runId, qint64 step) const;
    HistogramSeries histogramSeries(qint64 runId, const QString& tensor, TensorKind kind) const;
    // The shadow error track (numerics.shadow_every): the shadowed steps after `afterStep`, in
    // ascending order, each with its rows in the order they were recorded (run_store_shadow.cpp).
    std::vector<ShadowRecord> shadowRecords(qint64 runId, qint64 afterStep = 0) const;
    // `filePath` is stored relative to directory() when it lies inside it.
    qint64 addCheckpoint(qint64 runId, const QString& filePath, qint64 step, int epoch);

    // Comparison groups: runs trained to be compared side by side (fp32 vs fp16).
    qint64 createGroup(const QString& name);
    QList<GroupInfo> groups() const; // newest first
    void setRunGroup(qint64 runId, std::optional<qint64> groupId);
    QList<RunInfo> groupRuns(qint64 groupId) const;

    // Sweeps (engine/sweep/sweep_spec.h): a sweep row and its runs (NewRun::sweepId, sweepIndex).
    // run_store_sweeps.cpp.
    qint64 createSweep(const NewSweep& sweep);
    SweepInfo sweep(qint64 sweepId) const; // NotFound for an unknown id
    std::optional<SweepInfo> findSweep(const QString& uid) const;
    // The newest sweep with exactly this spec (sweepSpecToJson): the one a restarted sweep resumes.
    std::optional<SweepInfo> findSweepBySpec(const QString& specJson) const;
    QList<SweepInfo> sweeps() const;                // newest first
    QList<RunInfo> sweepRuns(qint64 sweepId) const; // by sweep index, then oldest attempt first

    // Copies the finished runs of another run database (a Slurm task's) into this one, with
    // their rows, tags, checkpoints (paths made to point at the source's files) and sweep,
    // which is matched by uid so that the runs of one sweep meet in one sweep row. A run whose
    // uid is already here is left alone, so importing twice adds nothing; a run still being
    // written is not imported (import again later). Throws StorageError naming `sourcePath`
    // when it is not a Mantissa run database (foreign, corrupt, empty, newer, this database).
    ImportResult importRuns(const QString& sourcePath);

private:
    // The GEMM inputs of record.step (numerics_gemm_inputs), into record.gemmInputs.
    void readGemmInputs(qint64 runId, NumericsRecord& record) const;
    void requireRun(qint64 runId) const;
    // UPDATE runs SET column = value for one run; `what` names the action in errors.
    void setRunText(qint64 runId, const char* column, const QString& value, const QString& what);
    void requireGroup(qint64 groupId) const;
    void requireSweep(qint64 sweepId) const;

    std::unique_ptr<Connection> m_connection;
};

} // namespace mantissa::storage
