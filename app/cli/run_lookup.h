#pragma once
// The RUN argument of show, export, delete, note and tag: a run id ("12") or its unique
// name ("mlp-mixed-fp16-3"). An unknown run is a StorageError (NotFound) whose message
// names the database, which the commands report with exit code 2.
#include "engine/config/run_config.h"
#include "storage/run_store.h"

namespace mantissa::cli {

storage::RunInfo lookUpRun(const storage::RunStore& store, const QString& idOrName);

// A stored run's config, to train again (train --from-run) or continue (fork): an imported
// model from the database's copy when its file has moved or changed since (said on stderr).
RunConfig storedRunConfig(const storage::RunStore& store, const storage::RunInfo& run);

} // namespace mantissa::cli
