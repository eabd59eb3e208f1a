#pragma once
// Runs training on a worker thread and brings its records to the UI thread: a QTimer
// drains the RecordBuffer every 40 ms and re-emits what arrived as one batch, so the UI
// handles 25 updates a second however fast the steps come. Runs can be queued (the
// "Compare precisions" action trains fp32 and then the low precision, one after another).
#include "engine/config/run_config.h"
#include "ui/record_buffer.h"
#include "ui/recording_target.h"

#include <QList>
#include <QObject>
#include <QThread>
#include <QTimer>

namespace mantissa::ui {

class TrainingWorker;

class RunController : public QObject {
    Q_OBJECT
public:
    explicit RunController(QObject* parent = nullptr);
    // Stops a run in progress and waits for the worker thread to finish.
    ~RunController() override;

    // Queues `configs` and starts the first; refused (returns false) while a run is active.
    // Every run of the sequence is recorded in `target`'s database when it names one.
    bool start(const QList<RunConfig>& configs, const RecordingTarget& target = {});
    void setPaused(bool paused);
    // Stops the current run and drops the queued ones.
    void stop();

    bool isRunning() const { return m_running; }
    bool isPaused() const { return m_paused; }
    int currentIndex() const { return m_index; }
    int queuedCount() const { return static_cast<int>(m_queue.size()); }
    // Drain period; 40 ms keeps plots fluid at 25 frames a second.
    void setDrainInterval(int ms) { m_timer.setInterval(ms); }

signals:
    // A run of the sequence begins (before its data is loaded).
    void runStarted(int index, const mantissa::RunConfig& config);
    // Records that arrived since the last drain; `batch.started` when training began.
    void recordsArrived(const mantissa::ui::RecordBatch& batch);
    // The run is over; `failure` is set when it could not start (data, config, device).
    void runEnded(int index, const mantissa::RunSummary& summary, const QString& failure);
    // The whole sequence is over (all runs, or a stop).
    void sequenceEnded(bool completed);
    // Emitted after every drain, so views redraw at most once per period.
    void tick();

private:
    void startNext();
    void drain();

    QThread m_thread;
    RecordBuffer m_buffer;
    TrainingWorker* m_worker;
    QTimer m_timer;
    QList<RunConfig> m_queue;
    RecordingTarget m_target;
    int m_index = -1;
    bool m_running = false;
    bool m_paused = false;
    bool m_stopped = false;
};

} // namespace mantissa::ui
