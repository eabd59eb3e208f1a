#pragma once
// What a training run reports when it ends, and the states a run can be in. One vocabulary
// for the trainer, the run store, the CLI and the UI: a status read back from the store is
// the same enum the trainer returned, so nothing maps one onto the other.
#include "engine/observe/rank_throughput.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mantissa {

enum class RunStatus : std::uint8_t {
    Running,
    Finished,
    Stopped, // by the user
    Diverged,
    Failed,
    // Never returned by Trainer::run: a run whose process died (or closed it unfinished) while
    // it was Running, as the run store finds it afterwards (docs/storage.md, crash recovery).
    // It lives here rather than in storage/ because it is a state of the run, not of the file:
    // with one enum the UI and the CLI show, filter and compare every status the same way,
    // and the next ways of running (sweeps, several processes) meet the same crashed runs.
    Interrupted,
};

// "running", "finished", "stopped", "diverged", "failed", "interrupted": also the strings
// stored in runs.status.
const char* runStatusName(RunStatus status);
std::optional<RunStatus> parseRunStatus(std::string_view name);

struct RunSummary {
    RunStatus status = RunStatus::Running;
    std::string message; // why it stopped, for diverged/failed runs
    // The evaluation fields below mean something once `epochs` > 0: before the first
    // evaluation they are placeholders, and a recorder stores them as "not known".
    float trainLoss = 0; // mean over the last epoch's finite steps
    float testLoss = 0, testAccuracy = 0, bestTestAccuracy = 0;
    float bestTestLoss = NAN; // the lowest: regression's best RMSE, a language model's best bits per character
    std::int64_t steps = 0, skippedSteps = 0;
    int epochs = 0; // completed (or partially run) epochs
    float finalLossScale = 1;
    double samplesPerSecond = 0; // training steps only, evaluation excluded; 0: not known
    double trainSeconds = 0, wallSeconds = 0;
    std::size_t peakBytes = 0; // peak memory allocated through the backend; 0: not known
    // A data-parallel run: one entry per rank, in rank order (rank 0's summary); empty for a
    // single process and after a failure (a rank may be gone).
    std::vector<RankThroughput> ranks;
};

} // namespace mantissa
