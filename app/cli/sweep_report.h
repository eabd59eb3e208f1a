#pragma once
// The results of a sweep as stored: for each configuration, the outcome of each of its seeds
// (the latest attempt that finished or diverged, else the latest attempt), and the statistics
// over the seeds: mean, sd and 95% interval of every final metric over the runs that did not
// diverge, the divergence rate with its Wilson interval, and a sentence per configuration
// against the first (the baseline). Printed as a table and as JSON.
#include "engine/sweep/sweep_spec.h"
#include "storage/run_types.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <vector>

namespace mantissa::cli {

struct ConfigurationResults {
    SweepConfiguration configuration;
    int planned = 0;              // runs the spec asks for (its seeds)
    QList<storage::RunInfo> runs; // the outcome of each seed that has one, by sweep index
    int finished = 0, diverged = 0, failed = 0, interrupted = 0;
    int missing() const { return planned - int(runs.size()); }
};

std::vector<ConfigurationResults> collectResults(const SweepPlan& plan, const QList<storage::RunInfo>& sweepRuns);

// Indices of the runs still to do: no attempt that finished or diverged.
std::vector<int> missingRuns(const SweepPlan& plan, const QList<storage::RunInfo>& sweepRuns);

void printSweepStatistics(std::FILE* out, const std::vector<ConfigurationResults>& results);
nlohmann::json sweepStatisticsJson(const std::vector<ConfigurationResults>& results);

} // namespace mantissa::cli
