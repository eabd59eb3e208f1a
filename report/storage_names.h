#pragma once
// report/ is written over the run store, so the store's names (mantissa::storage) are
// visible unqualified inside mantissa::report. Run statuses are the engine's
// (engine/train/run_summary.h), which the store names too.
#include "storage/run_store.h"
#include "storage/storage_error.h"

namespace mantissa::report {
using namespace mantissa::storage;
} // namespace mantissa::report
