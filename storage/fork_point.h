#pragma once
// Where a fork starts: a run's saved training state at a step (the checkpoints a recorded run
// keeps every training.save_state_every steps, between epochs and at its end; each holds the
// whole state, Trainer::saveCheckpoint). mantissa-cli fork and the GUI's "Fork from here…"
// find it here.
#include "storage/run_store.h"

#include <QList>

namespace mantissa::storage {

// The steps of `runId` that have a saved training state, ascending.
QList<qint64> savedStateSteps(const RunStore& store, qint64 runId);

// The saved state of `parent` at `step`. StorageError (NotFound) when it has none there, naming
// the steps that have one (or saying it has none, and how a run keeps them).
CheckpointInfo forkPoint(const RunStore& store, const RunInfo& parent, qint64 step);

// The step with a saved state nearest to `step` (the later one on a tie); nothing when the run has none.
std::optional<qint64> nearestSavedState(const RunStore& store, qint64 runId, double step);

} // namespace mantissa::storage
