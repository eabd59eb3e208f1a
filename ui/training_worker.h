#pragma once
// Trains one run on the worker thread: selects the backend, loads the data, builds the
// Trainer and runs it, leaving every record in the RecordBuffer. Lives on a QThread;
// train() is invoked there through a queued call, and blocks that thread until the run ends.
#include "engine/config/run_config.h"
#include "engine/train/run_summary.h"
#include "ui/recording_target.h"

#include <QObject>

#include <atomic>
#include <mutex>

namespace mantissa {
class Trainer;
class TrainingObserver;
} // namespace mantissa

namespace mantissa::storage {
class RunRecorder;
}

namespace mantissa::ui {

class RecordBuffer;

class TrainingWorker : public QObject {
    Q_OBJECT
public:
    explicit TrainingWorker(RecordBuffer* buffer);

    // Runs on the worker thread. Never throws: errors end the run with a failure message.
    // With a database in `target`, the run is recorded there as it trains.
    void train(const RunConfig& config, const RecordingTarget& target);

    // Thread-safe, and effective even before the trainer exists (while data loads).
    void requestStop();
    void setPaused(bool paused);
    // Resets the controls before a new run (UI thread, while idle).
    void resetControls();

private:
    RunSummary runTrainer(Trainer& trainer, storage::RunRecorder* recorder);

    RecordBuffer* m_buffer;
    std::atomic<bool> m_stopRequested{false};
    std::atomic<bool> m_paused{false};
    // Guards m_trainer: the UI thread forwards stop/pause to it while the worker creates
    // and destroys it. Held for a pointer check only, so the UI never waits on training.
    std::mutex m_trainerMutex;
    Trainer* m_trainer = nullptr;
};

} // namespace mantissa::ui
