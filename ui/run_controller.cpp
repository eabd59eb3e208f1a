#include "ui/run_controller.h"

#include "ui/training_worker.h"

namespace mantissa::ui {

RunController::RunController(QObject* parent) : QObject(parent), m_worker(new TrainingWorker(&m_buffer))
{
    m_thread.setObjectName("mantissa-training");
    m_worker->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    m_thread.start();
    m_timer.setInterval(40);
    connect(&m_timer, &QTimer::timeout, this, &RunController::drain);
}

RunController::~RunController()
{
    m_worker->requestStop();
    m_thread.quit();
    m_thread.wait();
}

bool RunController::start(const QList<RunConfig>& configs, const RecordingTarget& target)
{
    if (m_running || configs.isEmpty())
        return false;
    m_queue = configs;
    m_target = target;
    m_index = -1;
    m_stopped = false;
    startNext();
    return true;
}

void RunController::startNext()
{
    ++m_index;
    const RunConfig config = m_queue.takeFirst();
    m_running = true;
    m_paused = false;
    m_worker->resetControls();
    emit runStarted(m_index, config);
    TrainingWorker* worker = m_worker;
    const RecordingTarget target = m_target;
    QMetaObject::invokeMethod(
        worker, [worker, config, target] { worker->train(config, target); }, Qt::QueuedConnection);
    m_timer.start();
}

void RunController::setPaused(bool paused)
{
    if (!m_running)
        return;
    m_paused = paused;
    m_worker->setPaused(paused);
}

void RunController::stop()
{
    if (!m_running)
        return;
    m_stopped = true;
    m_queue.clear();
    m_worker->requestStop();
}

void RunController::drain()
{
    RecordBatch batch = m_buffer.take();
    if (!batch.empty())
        emit recordsArrived(batch);
    if (batch.ended) {
        m_timer.stop();
        m_paused = false;
        // Still "running" while runEnded is handled, so a handler cannot start another
        // sequence in the middle of this one.
        emit runEnded(m_index, *batch.ended, batch.failure);
        // A failed run stops the sequence: comparing against a run that never trained means nothing.
        const bool failed = batch.ended->status == RunStatus::Failed;
        if (!m_queue.isEmpty() && !m_stopped && !failed) {
            startNext();
        } else {
            m_queue.clear();
            m_running = false;
            emit sequenceEnded(!m_stopped && !failed);
        }
    }
    emit tick();
}

} // namespace mantissa::ui
