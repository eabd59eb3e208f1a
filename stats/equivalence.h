#pragma once
// Is the gap between two configurations real, absent or undecided? For one final metric over
// the seeds of two configurations:
// - equivalence: Schuirmann's two one-sided tests (TOST) of |mean(b) - mean(a)| < margin, with
//   Welch's standard error and degrees of freedom; equivalent at level alpha exactly when the
//   (1 - 2 alpha) interval of the difference lies inside (-margin, +margin);
// - difference: Welch's two-sided t-test of mean(b) = mean(a);
// - paired: where each value of b has its partner in a (the same seed: the same initial weights
//   and data order, the arms differing only in what is compared), both tests run on the
//   differences b_k - a_k with n - 1 degrees of freedom (the paired t-test and paired TOST):
//   the seed-to-seed spread the two arms share cancels, and only how they differ remains;
// - over the pairs of a comparison, each family of p-values adjusted by Holm's step-down
//   correction, so that "equivalent" and "worse" hold for all pairs at once at level alpha;
// - where neither is decided, about how many seeds per arm would decide it at 80% power, from
//   the observed spread (normal approximation; the sentence says "about"), at the level Holm's
//   first step asks of a pair (alpha over the number of pairs compared), and never fewer than
//   one more than the seeds that did not decide it.
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
    // For the sample size: sqrt((var(a) + var(b)) / 2); paired, sd(b - a) / sqrt(2), so that the
    // same formula gives the number of pairs.
    double pooledSd = 0;
    bool paired = false; // nA == nB pairs
};

// nullopt when either sample has fewer than 2 values. Throws std::invalid_argument when the
// margin is not a positive finite number or alpha is not in (0, 0.5). Samples without spread:
// equivalent (p = 0) when |difference| < margin, different (p = 0) when the means differ.
std::optional<EquivalenceTest> equivalenceTest(const std::vector<double>& a, const std::vector<double>& b,
                                               double margin, double alpha = 0.05);

// The same on paired samples, a[k] and b[k] from the same seed. nullopt with fewer than 2 pairs;
// throws std::invalid_argument for samples of different sizes, and as equivalenceTest.
std::optional<EquivalenceTest> pairedEquivalenceTest(const std::vector<double>& a, const std::vector<double>& b,
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

// A sample whose values carry a key each (the seed that produced it; distinct within a sample).
struct KeyedSample {
    std::vector<long long> keys;
    std::vector<double> values;
};
// The same over keyed samples: a pair whose samples share at least 2 keys is tested paired on the
// values of those keys (in key order), the others dropped; a pair that shares fewer, unpaired.
std::vector<PairVerdict> pairVerdicts(const std::vector<KeyedSample>& samples,
                                      const std::vector<std::pair<int, int>>& pairs, double margin,
                                      double alpha = 0.05);
// The values of `a` and `b` at the keys both have, in key order (a paired test's samples).
std::pair<std::vector<double>, std::vector<double>> matchedValues(const KeyedSample& a, const KeyedSample& b);

} // namespace mantissa::stats
