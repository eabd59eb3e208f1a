#pragma once
// A stored run's latest saved state: the checkpoint it keeps where it ended (runs save one
// when they finish or are stopped). What a fine-tune starts from (train --init-from RUN) and
// what the precision advisor probes (mantissa-cli advise RUN, the workbench's Advise… on a
// run); each reads it here, so the two say the same about a run without one.
#include "storage/run_types.h"

#include <QString>

namespace mantissa::storage {

class RunStore;

struct LatestState {
    QString path;        // the checkpoint file, absolute
    QString description; // "run 3 (tiny-fp32-1), epoch 2, step 32"
};

// StorageError (NotFound) naming the run: it has no checkpoint (it diverged or failed, or is
// still running), or its checkpoint file is gone.
LatestState latestState(const RunStore& store, const RunInfo& run);

} // namespace mantissa::storage
