#pragma once
// A sweep's statistics on the terminal: a table with a row per configuration (runs, divergence
// rate, test accuracy, train loss, skipped steps, time, failures) and the sentence per pair, and
// the same figures as JSON. The results and statistics come from Mantissa::sweep.
#include "sweep/sweep_results.h"
#include "sweep/sweep_statistics.h"

#include <QCommandLineParser>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <vector>

namespace mantissa::cli {

using sweep::ConfigurationResults;

// --margin-accuracy POINTS, --margin-rmse R, --margin-bpc B and --margin-loss L: the equivalence
// margins of the verdicts (the test metric's follows the runs' task).
void addMarginOptions(QCommandLineParser& parser);
// Throws ConfigError naming the option when a margin is not a positive number.
sweep::EquivalenceMargins marginsFromOptions(const QCommandLineParser& parser);

void printSweepStatistics(std::FILE* out, const std::vector<ConfigurationResults>& results,
                          const sweep::EquivalenceMargins& margins = {});
nlohmann::json sweepStatisticsJson(const std::vector<ConfigurationResults>& results,
                                   const sweep::EquivalenceMargins& margins = {});

} // namespace mantissa::cli
