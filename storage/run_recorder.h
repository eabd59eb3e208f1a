#pragma once
// RunRecorder: the one way to record a Trainer run in the run database. mantissa-cli's
// train and compare, the GUI's training worker and whatever records runs next (sweeps,
// runs split over processes) all go through it, so every recorded run has the same row,
// the same rows per step and the same checkpoints.
//
//   start    the constructor: creates the run (config, preset, precision, device, version,
//            metadata) and claims it for writing on this thread (a RunWriter).
//   observe  a TrainingObserver: steps, epochs, events and numerics samples go to the writer.
//            With attach(trainer) it also stops the trainer when recording fails (training
//            on unrecorded would waste the run) and saves checkpoints between epochs and
//            every training.save_state_every steps (the states a fork starts from).
//   finish   finish(summary): the end-of-run checkpoint, then the status and summary.
//
// Crash safety is RunWriter's (docs/storage.md): rows are committed at least every second,
// a recorder destroyed unfinished leaves its run "interrupted", and a process killed
// mid-run leaves a "running" run that the next open marks "interrupted".
#include "engine/backend/backend.h"
#include "engine/config/run_config.h"
#include "engine/train/trainer.h"
#include "storage/run_types.h"

#include <QString>
#include <QStringList>

#include <memory>
#include <optional>

namespace mantissa::storage {

class RunStore;
class RunWriter;

// What the run row says beyond the config and the device.
struct RunMetadata {
    QString name;                  // empty: "<config name>-<precision>-<n>"
    std::optional<qint64> groupId; // comparison group (RunStore::createGroup)
    std::optional<qint64> sweepId; // sweep (RunStore::createSweep) and the run's place in it
    std::optional<int> sweepIndex;
    QStringList tags;
    QString notes;
    QString dataFingerprint;          // DatasetSplits::fingerprint of the data it trains on
    QString dataPreparation;          // dataPreparationText(): how it was prepared (normalisation)
    std::optional<RunLineage> parent; // a fork: the run and step it continues from
};

// How the error event of a refused checkpoint starts: the weights held NaN or infinity, so no
// checkpoint was written at that step, and the run went on (Trainer::saveCheckpoint).
inline constexpr const char* kCheckpointRefused = "checkpoint refused: ";

class RunRecorder final : public TrainingObserver {
public:
    // Creates the run in `store`, which must belong to this thread and outlive the recorder.
    // Throws StorageError when the database refuses; when the run was created but its writer
    // could not be opened, the run is marked failed first.
    RunRecorder(RunStore& store, const RunConfig& config, const Backend& backend, const RunMetadata& metadata = {});
    // Unfinished (the trainer threw, the caller forgot finish()): the run is marked interrupted.
    ~RunRecorder() override;
    RunRecorder(const RunRecorder&) = delete;
    RunRecorder& operator=(const RunRecorder&) = delete;

    // Records `trainer`'s run: observes it, stops it when recording fails, and saves a
    // checkpoint every training.checkpoint_every_epochs epochs and at the end of the run.
    // Call once, before trainer.run(); the trainer must outlive the recorder's use of it.
    void attach(Trainer& trainer);

    void onStep(const StepRecord& record) override;
    void onEpoch(const EpochRecord& record) override;
    void onEvent(const EventRecord& record) override;
    void onNumerics(const NumericsRecord& record) override;
    void onStatePoint(std::int64_t step) override;
    void onShadow(const ShadowRecord& record) override;

    // Saves the end-of-run checkpoint (an attached trainer's finished or stopped run, unless
    // the last epoch's checkpoint holds the same step), then writes the run's end. Returns the
    // summary as recorded: `summary` itself, or status Failed with the reason when recording
    // failed (the database stopped taking rows, a checkpoint could not be written). Call once.
    RunSummary finish(const RunSummary& summary);

    qint64 runId() const { return m_runId; }
    QString runName() const { return m_runName; }
    // Recording failed; errorMessage() says why.
    bool failed() const;
    QString errorMessage() const;

private:
    void stopIfFailed();
    void saveCheckpoint(int epoch);

    RunStore& m_store;
    const Backend& m_backend; // outlives the recorder: both live for one training
    std::unique_ptr<RunWriter> m_writer;
    Trainer* m_trainer = nullptr;
    int m_checkpointEveryEpochs = 0;
    qint64 m_runId = 0;
    QString m_runName;
    qint64 m_lastStep = 0;
    int m_lastStepEpoch = 0;
    qint64 m_lastCheckpointStep = 0;
    QString m_checkpointError; // set once, on the training thread, before the trainer is stopped
    bool m_finished = false;
};

} // namespace mantissa::storage
