#include "ui/record_buffer.h"

namespace mantissa::ui {

void RecordBuffer::onStep(const StepRecord& record)
{
    std::lock_guard lock(m_mutex);
    m_pending.steps.push_back(record);
}

void RecordBuffer::onEpoch(const EpochRecord& record)
{
    std::lock_guard lock(m_mutex);
    m_pending.epochs.push_back(record);
}

void RecordBuffer::onEvent(const EventRecord& record)
{
    std::lock_guard lock(m_mutex);
    m_pending.events.push_back(record);
}

void RecordBuffer::markStarted(const RunStartInfo& info)
{
    std::lock_guard lock(m_mutex);
    m_pending.started = info;
}

void RecordBuffer::markEnded(const RunSummary& summary, const QString& failure)
{
    std::lock_guard lock(m_mutex);
    m_pending.ended = summary;
    m_pending.failure = failure;
}

RecordBatch RecordBuffer::take()
{
    RecordBatch batch;
    std::lock_guard lock(m_mutex);
    std::swap(batch, m_pending);
    return batch;
}

} // namespace mantissa::ui
