#pragma once
// The plain sentences a sweep's statistics end with, one per pair of configurations:
//   "mixed-fp16 vs fp32: test accuracy -0.3 +/- 0.4 points, not significant (Welch's t-test,
//    p = 0.41, n = 8 each)"
//   "fp16 vs mixed-fp16: diverged 3 of 8 vs 0 of 8, not significant (Fisher's exact test, p = 0.2)"
// Significance is at the 5% level; "+/-" is the half-width of the difference's 95% interval.
#include "stats/equivalence.h"

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
    bool higherIsBetter = true; // accuracy; false for a loss
};

// `other` against `baseline` (the difference is mean(other) - mean(baseline)).
std::string describeDifference(const std::string& otherLabel, const std::string& baselineLabel,
                               const MetricFormat& metric, const std::vector<double>& baseline,
                               const std::vector<double>& other);

// The equivalence verdict of `other` against `baseline` (equivalence.h), `margin` in the
// metric's stored scale:
//   "mxfp8 vs mixed-bf16: test accuracy equivalent within +/-0.5 points (difference -0.12
//    [-0.31, +0.07], TOST with Holm's correction, p = 0.003, n = 8 each)"
//   "... worse by 0.83 points [0.56, 1.10] (Welch's t-test with Holm's correction, p < 0.001, ...)"
//   "... inconclusive: about 14 seeds per arm would decide it (difference -0.31 [-0.9, +0.3],
//    margin +/-0.5 points, n = 4 each)"
// A paired test (EquivalenceTest::paired) says "paired TOST", "paired t-test" and "paired over
// 5 seeds" instead.
std::string describeVerdict(const std::string& otherLabel, const std::string& baselineLabel, const MetricFormat& metric,
                            const PairVerdict& verdict, double margin, std::size_t baselineCount,
                            std::size_t otherCount);

// k of n runs diverged in each configuration.
std::string describeDivergence(const std::string& otherLabel, const std::string& baselineLabel, int baselineK,
                               int baselineN, int otherK, int otherN);

// "p = 0.41", "p = 0.021", "p < 0.001".
std::string formatP(double p);

} // namespace mantissa::stats
