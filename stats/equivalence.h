#pragma once
// Is the gap between two configurations real, absent or undecided? For one final metric over
// the seeds of two configurations:
// - equivalence: Schuirmann's two one-sided tests (TOST) of |mean(b) - mean(a)| < margin, with
//   Welch's standard error and degrees of freedom; equivalent at level alpha exactly when the
//   (1 - 2 alpha) interval of the difference lies inside (-margin, +margin);
// - difference: Welch's two-sided t-test of mean(b) = mean(a);
// - over the pairs of a comparison, each family of p-values adjusted by Holm's step-down
//   correction, so that "equivalent" and "worse" hold for all pairs at once at level alpha;
// - where neither is decided, about how many seeds per arm would decide it at 80% power, from
//   the observed spread (normal approximation; the sentence says "about").
// The t distribution and the normal quantiles come from GSL.
#include <optional>
#include <vector>

namespace mantissa::stats {

struct EquivalenceTest {
    int nA = 0, nB = 0;
    double difference = 0; // mean(b) - mean(a)
    double se = 0, df = 0; // Welch's
    double margin = 0;
    double pEquivalent = 1;                         // TOST: the larger of the two one-sided p-values
    double pDifferent = 1;                          // Welch's two-sided
    double equivalenceLow = 0, equivalenceHigh = 0; // (1 - 2 alpha) interval of the difference
    double differenceLow = 0, differenceHigh = 0;   // (1 - alpha) interval of the difference
    double pooledSd = 0;                            // sqrt((var(a) + var(b)) / 2), for the sample size
};

// nullopt when either sample has fewer than 2 values. Throws std::invalid_argument when the
// margin is not a positive finite number or alpha is not in (0, 0.5). Samples without spread:
// equivalent (p = 0) when |difference| < margin, different (p = 0) when the means differ.
std::optional<EquivalenceTest> equivalenceTest(const std::vector<double>& a, const std::vector<double>& b,
                                               double margin, double alpha = 0.05);

// Holm's step-down adjusted p-values, in the order given.
std::vector<double> holmAdjusted(const std::vector<double>& p);

// About how many seeds per arm a new comparison would need to decide at level alpha with 80%
// power: to show equivalence where |difference| < margin, else to show the difference.
// Never fewer than 2; 0 when sd is 0 (no spread: nothing more to learn).
int seedsPerArmToDecide(double difference, double sd, double margin, double alpha = 0.05);

enum class Verdict {
    Equivalent,   // within +-margin
    Different,    // the difference is significant (better or worse, by its sign and the metric)
    Inconclusive, // neither at level alpha after Holm's correction
    CannotTest    // fewer than two values in an arm
};

struct PairVerdict {
    Verdict verdict = Verdict::CannotTest;
    std::optional<EquivalenceTest> test;
    double pEquivalentAdjusted = 1, pDifferentAdjusted = 1;
    int seedsToDecide = 0; // for Inconclusive
};

// Every pair's verdict on one metric, Holm-adjusted over the pairs given (samples[i] against
// samples[j] for each pair (i, j) in `pairs`: the difference is mean(j) - mean(i)).
std::vector<PairVerdict> pairVerdicts(const std::vector<std::vector<double>>& samples,
                                      const std::vector<std::pair<int, int>>& pairs, double margin,
                                      double alpha = 0.05);

} // namespace mantissa::stats
