#pragma once
// A sweep's statistics on the terminal: a table with a row per configuration (runs, divergence
// rate, test accuracy, train loss, skipped steps, time, failures) and the sentence per pair, and
// the same figures as JSON. The results and statistics come from Mantissa::sweep.
#include "sweep/sweep_results.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <vector>

namespace mantissa::cli {

using sweep::ConfigurationResults;

void printSweepStatistics(std::FILE* out, const std::vector<ConfigurationResults>& results);
nlohmann::json sweepStatisticsJson(const std::vector<ConfigurationResults>& results);

} // namespace mantissa::cli
