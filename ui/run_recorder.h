#pragma once
// Records one GUI run in the run database, on the training thread: creates the run row
// (config, preset, precision, device, comparison group), forwards every record to a
// storage::RunWriter, stops the trainer if the writer fails (training on unrecorded would
// waste the run), and writes the final status and summary. The CLI does the same in
// app/cli/recorded_run.cpp; the two map the engine's summary to the stored one alike.
#include "engine/backend/backend.h"
#include "engine/config/run_config.h"
#include "engine/train/trainer.h"

#include <QString>

#include <memory>
#include <optional>

namespace mantissa::storage {
class RunStore;
class RunWriter;
}

namespace mantissa::ui {

struct RecordingTarget {
    QString databasePath;           // empty: the run is not recorded
    std::optional<qint64> groupId;  // comparison group
};

class RunRecorder final : public TrainingObserver {
public:
    // Creates the run; throws StorageError when the database refuses.
    RunRecorder(const RecordingTarget& target, const RunConfig& config, const Backend& backend, Trainer& trainer);
    ~RunRecorder() override;

    void onStep(const StepRecord& record) override;
    void onEpoch(const EpochRecord& record) override;
    void onEvent(const EventRecord& record) override;
    void onNumerics(const NumericsRecord& record) override;

    // Writes the run's end. Returns the writer's error when recording failed (the run is
    // then stored as failed with that message), else an empty string.
    QString finish(const RunSummary& summary);
    qint64 runId() const { return m_runId; }
    QString runName() const { return m_runName; }

private:
    void stopIfFailed();

    std::unique_ptr<storage::RunStore> m_store;
    std::unique_ptr<storage::RunWriter> m_writer;
    Trainer& m_trainer;
    qint64 m_runId = 0;
    QString m_runName;
};

} // namespace mantissa::ui
