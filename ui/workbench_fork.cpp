// The Workbench's forks: "Fork from here…" on a recorded run's loss curve starts a new run
// from the run's training state saved nearest the click, with the precision and learning rate
// the dialog changes (mantissa-cli fork does the same from the command line).
#include "ui/workbench.h"

#include "engine/train/fork_compatibility.h"
#include "storage/fork_point.h"
#include "storage/run_store.h"
#include "storage/stored_config.h"
#include "ui/error_banner.h"
#include "ui/fork_dialog.h"
#include "ui/run_controller.h"
#include "ui/run_status_bar.h"

namespace mantissa::ui {

bool Workbench::forkStoredRun(qint64 runId, double step)
{
    if (!m_store)
        return false;
    try {
        const storage::RunInfo run = m_store->run(runId);
        const std::optional<qint64> nearest = storage::nearestSavedState(*m_store, runId, step);
        if (!nearest) {
            m_banner->showError(tr("%1 has no saved training state").arg(run.name),
                                tr("A run saves its state when it finishes or is stopped, every "
                                   "training.checkpoint_every_epochs epochs and every training.save_state_every "
                                   "steps (Training tab): set it before training the run you mean to fork."));
            return false;
        }
        const RunConfig parentConfig = storage::storedRunConfig(*m_store, run);
        ForkDialog dialog(parentConfig,
                          tr("Fork %1 (#%2) after step %3, the saved state nearest where you clicked.")
                              .arg(run.name)
                              .arg(runId)
                              .arg(*nearest),
                          this);
        if (dialog.exec() != QDialog::Accepted)
            return false;
        return startFork(runId, *nearest, dialog.config(), dialog.runName());
    } catch (const std::exception& e) {
        m_banner->showError(tr("Cannot fork run %1").arg(runId), QString::fromLocal8Bit(e.what()));
        return false;
    }
}

bool Workbench::startFork(qint64 runId, qint64 step, const RunConfig& config, const QString& name)
{
    if (!m_store)
        return false;
    if (m_controller->isRunning()) {
        m_status->showMessage(tr("A run is in progress"));
        return false;
    }
    try {
        const storage::RunInfo parent = m_store->run(runId);
        const storage::CheckpointInfo state = storage::forkPoint(*m_store, parent, step);
        validateRunConfig(config, "the fork");
        if (const std::optional<std::string> change =
                forkShapeChange(storage::storedRunConfig(*m_store, parent), config))
            throw ConfigError(*change);
        RecordingTarget target;
        target.databasePath = databasePath();
        target.runName = name;
        target.resumeFrom = state.absolutePath;
        target.parentRunId = runId;
        target.parentStep = step;
        m_comparing = false;
        m_sequence.clear();
        if (!m_controller->start({config}, target))
            return false;
        m_status->showMessage(tr("Forking %1 after step %2").arg(parent.name).arg(step));
        return true;
    } catch (const std::exception& e) {
        m_banner->showError(tr("Cannot fork run %1").arg(runId), QString::fromLocal8Bit(e.what()));
        return false;
    }
}

} // namespace mantissa::ui
