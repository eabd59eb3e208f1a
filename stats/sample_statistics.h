#pragma once
// Statistics over the seeds of one configuration and between two configurations: the mean
// with its t-based confidence interval, Welch's t-test for a difference of means, Wilson's
// interval for a proportion (k of n runs diverged) and Fisher's exact test for two
// proportions. Distributions come from GSL.
#include <optional>
#include <vector>

namespace mantissa::stats {

struct SampleSummary {
    int n = 0;
    double mean = 0;
    double sd = 0;                // sample standard deviation (n - 1); NaN when n < 2
    double ciLow = 0, ciHigh = 0; // confidence interval of the mean; NaN when n < 2
};
// Throws std::invalid_argument for an empty sample or a confidence outside (0, 1).
SampleSummary summarize(const std::vector<double>& values, double confidence = 0.95);

// Welch's unequal-variance t-test of mean(b) - mean(a).
struct WelchTest {
    double difference = 0; // mean(b) - mean(a)
    double halfWidth = 0;  // of its confidence interval (Welch-Satterthwaite degrees of freedom)
    double t = 0, df = 0;
    double p = 1; // two-sided
};
// nullopt when either sample has fewer than 2 values. Two samples without any spread give
// p = 1 when their means agree and p = 0 when they differ (t is then +-infinity).
std::optional<WelchTest> welchTest(const std::vector<double>& a, const std::vector<double>& b,
                                   double confidence = 0.95);

struct ProportionInterval {
    int k = 0, n = 0;
    double low = 0, high = 0; // Wilson score interval; [0, 1] when n == 0
};
ProportionInterval wilsonInterval(int k, int n, double confidence = 0.95);

// Two-sided p of Fisher's exact test on the 2x2 table (k1 of n1) vs (k2 of n2): the sum of
// the probabilities of every table with these margins no more likely than the observed one.
double fisherExactTest(int k1, int n1, int k2, int n2);

} // namespace mantissa::stats
