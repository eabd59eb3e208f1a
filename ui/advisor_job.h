#pragma once
// The precision advisor (engine/advisor/advice.h) on a worker thread for the Advise panel:
// optionally trains the config first (the state the probes measure), builds the probe and
// runs adviseLayers(), reporting "probe k of n" as it goes. cancel() stops the training, or
// stops between probes; the GUI thread never waits on a probe.
#include "engine/advisor/advice.h"
#include "engine/config/run_config.h"

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>

class QThread;

namespace mantissa {
class Trainer;
}

namespace mantissa::ui {

struct AdvisorJobSettings {
    RunConfig config;
    AdviceRequest request;
    AdvisorProbeOptions probe;
    // The state to probe (a stored run's checkpoint); empty: trainFirst says where it comes from.
    std::string checkpoint;
    // Train the config (its training settings) before probing; else probe its initial weights.
    bool trainFirst = true;
};

class AdvisorJob : public QObject {
    Q_OBJECT
public:
    explicit AdvisorJob(AdvisorJobSettings settings, QObject* parent = nullptr);
    // Cancels and waits for the worker: a probe in progress finishes first.
    ~AdvisorJob() override;

    void start();
    void cancel();
    bool isRunning() const;

    const AdvisorJobSettings& settings() const { return m_settings; }
    // After finished(): the advice, or nothing when cancelled or failed.
    const std::optional<AdviceTable>& result() const { return m_result; }
    // After finished(): why it failed (the engine's message), or empty.
    const QString& error() const { return m_error; }
    bool cancelled() const { return m_cancel.load(); }

signals:
    // `index` of `total` steps done or under way, and what is measured ("probe 3 of 8: 1.fc in mxfp4").
    void progress(int index, int total, const QString& text);
    void finished();

private:
    void work();

    AdvisorJobSettings m_settings;
    QThread* m_thread = nullptr;
    std::atomic<bool> m_cancel{false};
    std::mutex m_trainerMutex; // guards m_trainer between the worker and cancel()
    Trainer* m_trainer = nullptr;
    std::optional<AdviceTable> m_result;
    QString m_error;
};

} // namespace mantissa::ui
