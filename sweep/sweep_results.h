#pragma once
// The results of a sweep as stored: for each configuration, the outcome of each of its seeds
// (the latest attempt that finished or diverged, else the latest attempt). The CLI prints
// them, the GUI's Comparison tab and reports show them; sweep_statistics.h summarises them.
#include "engine/sweep/sweep_spec.h"
#include "storage/run_types.h"

#include <optional>
#include <vector>

namespace mantissa::storage {
class RunStore;
}

namespace mantissa::sweep {

struct ConfigurationResults {
    SweepConfiguration configuration;
    int planned = 0;              // runs the spec asks for (its seeds)
    QList<storage::RunInfo> runs; // the outcome of each seed that has one, by sweep index
    int finished = 0, diverged = 0, failed = 0, interrupted = 0;
    int missing() const { return planned - int(runs.size()); }
    // Runs that are a result (finished or diverged): the n of the divergence rate.
    int results() const { return finished + diverged; }
};

std::vector<ConfigurationResults> collectResults(const SweepPlan& plan, const QList<storage::RunInfo>& sweepRuns);

// Indices of the runs still to do: no attempt that finished or diverged.
std::vector<int> missingRuns(const SweepPlan& plan, const QList<storage::RunInfo>& sweepRuns);

// Runs grouped as a sweep would group them: runs whose configs are equal but for
// training.seed form one configuration, in the order of their first run; labelled by the
// settings in which the groups differ (the value alone when one setting differs, "lr=0.1,
// mode=fp16" for several, "base" when none does). Each run is taken as it is (its status is
// its outcome); `planned` is the group's size.
std::vector<ConfigurationResults> groupBySeed(const QList<storage::RunInfo>& runs);
// A run's training.seed as its stored config says; nullopt where the config has none or does not
// parse.
std::optional<long long> runSeed(const storage::RunInfo& run);

// Whether some configuration holds runs of at least two different seeds: then statistics over
// seeds mean something (two runs with the same seed repeat one another).
bool hasSeveralSeeds(const std::vector<ConfigurationResults>& results);

// A stored sweep read back whole: its row, its spec expanded again and its results.
struct StoredSweep {
    storage::SweepInfo info;
    SweepSpec spec;
    SweepPlan plan;
    std::vector<ConfigurationResults> results;
};
// Throws StorageError (unknown sweep) or ConfigError (a stored spec this version refuses).
StoredSweep loadStoredSweep(const storage::RunStore& store, qint64 sweepId);

} // namespace mantissa::sweep
