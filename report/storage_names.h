#pragma once
// report/ is written over the run store, so the store's names (mantissa::storage) are
// visible unqualified inside mantissa::report. The store's RunStatus and RunSummary share
// their names with the engine's trainer types: a report file must not include
// engine/train/trainer.h, or those names turn ambiguous here.
#include "storage/run_store.h"
#include "storage/storage_error.h"

namespace mantissa::report {
using namespace mantissa::storage;
} // namespace mantissa::report
