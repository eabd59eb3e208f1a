#include "stats/rank_correlation.h"

#include <gsl/gsl_statistics_double.h>

#include <algorithm>
#include <cmath>

namespace mantissa::stats {

std::optional<double> spearmanCorrelation(const std::vector<double>& a, const std::vector<double>& b)
{
    if (a.size() != b.size() || a.size() < 2)
        return std::nullopt;
    const auto finite = [](double v) { return std::isfinite(v); };
    if (!std::all_of(a.begin(), a.end(), finite) || !std::all_of(b.begin(), b.end(), finite))
        return std::nullopt;
    const auto constant = [](const std::vector<double>& v) {
        return std::all_of(v.begin(), v.end(), [&](double x) { return x == v.front(); });
    };
    if (constant(a) || constant(b))
        return std::nullopt;
    std::vector<double> work(2 * a.size());
    return gsl_stats_spearman(a.data(), 1, b.data(), 1, a.size(), work.data());
}

} // namespace mantissa::stats
