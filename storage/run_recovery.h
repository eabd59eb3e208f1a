#pragma once
// Internal: crash recovery. A process killed while training leaves its run "running"
// with every committed row intact; the next process to open the database marks it
// "interrupted", unless its writer is still alive (process_liveness.h).
#include <QtGlobal>

namespace mantissa::storage {

class Connection;

// Returns the number of runs marked.
int markInterruptedRuns(const Connection& connection);

// Whether the recorded writer of a run may still be writing it.
bool isRunWriterAlive(const Connection& connection, qint64 runId);

} // namespace mantissa::storage
