#pragma once
// Spearman's rank correlation of two paired samples: how well one ordering (a cheap
// sensitivity score) agrees with another (a measured loss increase). Ties take their mean
// rank. Computed by GSL (gsl_stats_spearman).
#include <optional>
#include <vector>

namespace mantissa::stats {

// In [-1, 1]; nullopt for fewer than 2 pairs, samples of different lengths, a non-finite value,
// or a sample whose values are all equal (no ordering to compare).
std::optional<double> spearmanCorrelation(const std::vector<double>& a, const std::vector<double>& b);

} // namespace mantissa::stats
