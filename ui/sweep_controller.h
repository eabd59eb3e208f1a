#pragma once
// Runs a sweep from the GUI: the same machinery as `mantissa-cli sweep` (sweep::launchSweep
// resumes the sweep with this spec or starts one in the run store; sweep::SweepRunner trains
// the missing runs in `mantissa-cli sweep-worker` processes), driven from the GUI's event loop
// so that the window keeps responding, with progress (done/running/failed, ETA) by signals.
#include "engine/sweep/sweep_spec.h"
#include "sweep/sweep_runner.h"

#include <QObject>

#include <memory>

namespace mantissa::storage {
class RunStore;
}

namespace mantissa::ui {

class SweepController : public QObject {
    Q_OBJECT
public:
    explicit SweepController(QObject* parent = nullptr);
    ~SweepController() override;

    // The program that trains one run: `mantissa-cli` beside this program unless set.
    QString workerProgram() const { return m_workerProgram; }
    void setWorkerProgram(const QString& path) { m_workerProgram = path; }

    // Starts (or resumes) the sweep of `spec` in `store`, `jobs` runs at once (0: one per core,
    // each with one thread). False, with the reason in `error`, when a run of the spec is
    // refused (the message names the axis, value and run), the worker program is missing or
    // the database fails; a sweep with nothing left to run finishes at once.
    bool start(storage::RunStore& store, const SweepSpec& spec, int jobs, QString* error);
    void stop();
    bool isRunning() const;
    qint64 sweepId() const { return m_sweepId; }
    sweep::SweepProgress progress() const;

signals:
    void started(qint64 sweepId, int runsToDo, bool resumed);
    void progressChanged(const mantissa::sweep::SweepProgress& progress);
    void runEnded(const mantissa::sweep::SweepRunEnd& end);
    void finished(qint64 sweepId, const mantissa::sweep::SweepProgress& progress);

private:
    QString m_workerProgram;
    std::unique_ptr<sweep::SweepRunner> m_runner;
    qint64 m_sweepId = 0;
};

} // namespace mantissa::ui
