#pragma once
// The plain sentences a sweep's statistics end with, one per pair of configurations:
//   "mixed-fp16 vs fp32: test accuracy -0.3 +/- 0.4 points, not significant (Welch's t-test,
//    p = 0.41, n = 8 each)"
//   "fp16 vs mixed-fp16: diverged 3 of 8 vs 0 of 8, not significant (Fisher's exact test, p = 0.2)"
// Significance is at the 5% level; "+/-" is the half-width of the difference's 95% interval.
#include <string>
#include <vector>

namespace mantissa::stats {

// How a metric reads in a sentence: test accuracy is stored in [0, 1] and read in
// percentage points (scale 100, unit "points").
struct MetricFormat {
    std::string name; // "test accuracy"
    double scale = 1;
    std::string unit; // "points", or "" for none
    int decimals = 2;
};

// `other` against `baseline` (the difference is mean(other) - mean(baseline)).
std::string describeDifference(const std::string& otherLabel, const std::string& baselineLabel,
                               const MetricFormat& metric, const std::vector<double>& baseline,
                               const std::vector<double>& other);

// k of n runs diverged in each configuration.
std::string describeDivergence(const std::string& otherLabel, const std::string& baselineLabel, int baselineK,
                               int baselineN, int otherK, int otherN);

// "p = 0.41", "p = 0.021", "p < 0.001".
std::string formatP(double p);

} // namespace mantissa::stats
