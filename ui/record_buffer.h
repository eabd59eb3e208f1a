#pragma once
// Where the training thread leaves its records for the UI thread. The trainer calls the
// observer methods once per step; the UI takes everything that accumulated every 40 ms.
// One queued signal per step would flood the UI event loop at thousands of steps per
// second; a mutex held for a push_back costs the trainer nothing measurable.
#include "engine/observe/records.h"
#include "engine/train/trainer.h"

#include <QString>

#include <mutex>
#include <optional>
#include <vector>

namespace mantissa::ui {

// Known once the data is loaded and the trainer is built.
struct RunStartInfo {
    std::int64_t totalSteps = 0;
    std::int64_t stepsPerEpoch = 0;
    std::int64_t trainSamples = 0, testSamples = 0;
    QString device;     // the backend's name
    QString deviceNote; // why this backend (selectBackend's reason)
    QString scaler;     // LossScaler::describe()
    QString kernels;    // Backend::kernelPaths(): which path each 16-bit type takes
    qint64 runId = 0;   // in the run database; 0 when the run is not recorded
    QString runName;    // as the database named it ("mlp-fp32-3")
    // data.task as the data resolved it (withResolvedTask), for the run's metric.
    DataTask task = DataTask::Classification;
    QString dataFingerprint; // DatasetSplits::fingerprint
};

// Everything that arrived since the last take(), in arrival order per kind. Steps always
// arrive before the epoch record and the events of the same step.
struct RecordBatch {
    std::vector<StepRecord> steps;
    std::vector<EpochRecord> epochs;
    std::vector<EventRecord> events;
    std::optional<RunStartInfo> started;
    std::optional<RunSummary> ended; // the run is over (any status)
    QString failure;                 // set with `ended` when the run never started (bad data, config)

    bool empty() const { return steps.empty() && epochs.empty() && events.empty() && !started && !ended; }
};

class RecordBuffer final : public TrainingObserver {
public:
    void onStep(const StepRecord& record) override;
    void onEpoch(const EpochRecord& record) override;
    void onEvent(const EventRecord& record) override;

    void markStarted(const RunStartInfo& info);
    void markEnded(const RunSummary& summary, const QString& failure = {});
    // Moves out everything buffered (any thread; the UI calls it from its timer).
    RecordBatch take();

private:
    std::mutex m_mutex;
    RecordBatch m_pending;
};

} // namespace mantissa::ui
