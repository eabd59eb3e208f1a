#pragma once
// Reads a recorded run back from the run database into a RunRecording, so the monitor and
// the comparison view show stored runs exactly like live ones.
#include "ui/run_recording.h"

#include <memory>

namespace mantissa::storage {
class RunStore;
}

namespace mantissa::ui {

// Throws StorageError (unknown run, unreadable database) or ConfigError (a stored config
// this version cannot parse).
std::shared_ptr<RunRecording> loadStoredRun(const storage::RunStore& store, qint64 runId);

} // namespace mantissa::ui
