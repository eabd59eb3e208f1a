#pragma once
// A stored run's config as something to train again, continue or show: the config the run
// recorded, with an imported model read from the database's copy of its file (RunStore::
// modelFilePath), which stays when the original file moves or changes. The CLI (train
// --from-run, fork, export-model) and the GUI (opening a run, forking it) read it here.
#include "engine/config/run_config.h"
#include "storage/run_types.h"

namespace mantissa::storage {

class RunStore;

// ConfigError when the stored config does not parse in this version; StorageError when the
// model's copy cannot be written. `relocated`, when given, is set to a sentence naming the
// copy used when it is not the file the config named, and cleared otherwise.
RunConfig storedRunConfig(const RunStore& store, const RunInfo& run, QString* relocated = nullptr);

} // namespace mantissa::storage
