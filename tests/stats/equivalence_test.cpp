// The equivalence verdicts (stats/equivalence.h) against figures worked out by hand from
// printed tables, not from the code under test: samples built so that Welch's statistic lands
// on a t-table critical value, Holm's correction on a textbook example, the seeds needed from
// the normal-approximation formula with tabled z values.
#include "stats/equivalence.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

using namespace mantissa::stats;

namespace {

// mean 3, variance 2.5, and the same shifted by 0.5: Welch's se = sqrt(2.5/5 + 2.5/5) = 1 and
// df = 1 / (0.5^2/4 + 0.5^2/4) = 8, so every statistic is a t with 8 degrees of freedom.
const std::vector<double> kA{1, 2, 3, 4, 5};
const std::vector<double> kB{1.5, 2.5, 3.5, 4.5, 5.5};

// t-table, 8 degrees of freedom: upper 5% point 1.860, upper 2.5% point 2.306.
constexpr double kT8Upper5 = 1.860;
constexpr double kT8Upper2_5 = 2.306;

} // namespace

TEST(Equivalence, WelchStatisticsOfTheWorkedSamples)
{
    const auto t = equivalenceTest(kA, kB, 1.0);
    ASSERT_TRUE(t);
    EXPECT_DOUBLE_EQ(t->difference, 0.5);
    EXPECT_NEAR(t->se, 1.0, 1e-12);
    EXPECT_NEAR(t->df, 8.0, 1e-9);
    // The intervals: 0.5 -+ 1.860 (90%, for TOST at 5%) and 0.5 -+ 2.306 (95%).
    EXPECT_NEAR(t->equivalenceLow, 0.5 - kT8Upper5, 1e-3);
    EXPECT_NEAR(t->equivalenceHigh, 0.5 + kT8Upper5, 1e-3);
    EXPECT_NEAR(t->differenceLow, 0.5 - kT8Upper2_5, 1e-3);
    EXPECT_NEAR(t->differenceHigh, 0.5 + kT8Upper2_5, 1e-3);
}

TEST(Equivalence, TostPIsTheTailBeyondTheNearerMargin)
{
    // margin 0.5 + 2.306: the upper test's statistic is (0.5 - margin) / 1 = -2.306, whose
    // lower tail is 2.5%; the lower test's (0.5 + margin) = 3.306 has a far smaller tail.
    const auto t = equivalenceTest(kA, kB, 0.5 + kT8Upper2_5);
    ASSERT_TRUE(t);
    EXPECT_NEAR(t->pEquivalent, 0.025, 2e-4);
    // Equivalent at 5% exactly when the 90% interval lies inside the margins.
    for (double margin : {2.0, 2.35, 2.37, 3.0}) {
        const auto m = equivalenceTest(kA, kB, margin);
        const bool inside = m->equivalenceLow > -margin && m->equivalenceHigh < margin;
        EXPECT_EQ(m->pEquivalent < 0.05, inside) << "margin " << margin;
    }
    // Welch's two-sided p for a statistic of 2.306 is 5%: shift b so the difference is 2.306.
    std::vector<double> shifted = kA;
    for (double& v : shifted)
        v += kT8Upper2_5;
    EXPECT_NEAR(equivalenceTest(kA, shifted, 1.0)->pDifferent, 0.05, 3e-4);
}

TEST(Equivalence, HolmsCorrectionOnTheTextbookExample)
{
    // Sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04 -> monotone 0.06.
    const std::vector<double> adjusted = holmAdjusted({0.01, 0.04, 0.03, 0.005});
    ASSERT_EQ(adjusted.size(), 4u);
    EXPECT_NEAR(adjusted[0], 0.03, 1e-12);
    EXPECT_NEAR(adjusted[1], 0.06, 1e-12);
    EXPECT_NEAR(adjusted[2], 0.06, 1e-12);
    EXPECT_NEAR(adjusted[3], 0.02, 1e-12);
    EXPECT_NEAR(holmAdjusted({0.6, 0.7})[1], 1.0, 1e-12) << "capped at 1";
}

TEST(Equivalence, AnInconclusivePairSaysHowManySeedsWouldDecideIt)
{
    // Accuracies of three seeds each, a difference of 0.0033 and a margin of 0.01.
    const std::vector<double> a{0.80, 0.90, 0.85}, b{0.84, 0.79, 0.93};
    const auto verdicts = pairVerdicts({a, b}, {{0, 1}}, 0.01);
    ASSERT_EQ(verdicts.size(), 1u);
    EXPECT_EQ(verdicts[0].verdict, Verdict::Inconclusive);
    // By hand: var(a) = 0.0025, var(b) = 0.0100667 / 2; s^2 = their mean; z 1.6449 and 0.8416.
    const double s2 = (0.0025 + 0.0100667 / 2) / 2;
    const double d = (0.84 + 0.79 + 0.93) / 3 - 0.85;
    const double expected = 2 * s2 * std::pow(1.6449 + 0.8416, 2) / std::pow(0.01 - d, 2);
    EXPECT_NEAR(verdicts[0].seedsToDecide, expected, expected * 0.01);
}

TEST(Equivalence, TheSeedsToDecideAPairAreCountedAtHolmsLevelAmongManyPairs)
{
    // The pair above among three pairs (a third arm far from both): z of 1 - 0.05 / 3 = 2.1280.
    const std::vector<double> a{0.80, 0.90, 0.85}, b{0.84, 0.79, 0.93}, far{0.20, 0.21, 0.19};
    const auto verdicts = pairVerdicts({a, b, far}, {{0, 1}, {0, 2}, {1, 2}}, 0.01);
    EXPECT_EQ(verdicts[0].verdict, Verdict::Inconclusive);
    const double s2 = (0.0025 + 0.0100667 / 2) / 2;
    const double d = (0.84 + 0.79 + 0.93) / 3 - 0.85;
    const double expected = 2 * s2 * std::pow(2.1280 + 0.8416, 2) / std::pow(0.01 - d, 2);
    EXPECT_NEAR(verdicts[0].seedsToDecide, expected, expected * 0.01);
}

TEST(Equivalence, AnUndecidedPairNeverAsksForFewerSeedsThanItRan)
{
    // Two seeds each, 0.04 apart with sd 0.0141: Welch's t = 2.83 on 2 degrees of freedom leaves
    // it undecided (p about 0.1), while the normal approximation asks for 2 seeds, the 2 that did
    // not decide it.
    const auto verdicts = pairVerdicts({{0.80, 0.82}, {0.76, 0.78}}, {{0, 1}}, 0.005);
    ASSERT_EQ(verdicts[0].verdict, Verdict::Inconclusive);
    EXPECT_EQ(seedsPerArmToDecide(verdicts[0].test->difference, verdicts[0].test->pooledSd, 0.005), 2);
    EXPECT_EQ(verdicts[0].seedsToDecide, 3);
}

TEST(Equivalence, TightSeedsAreEquivalentAndAShiftedArmIsDifferent)
{
    const std::vector<double> base{0.900, 0.902, 0.898, 0.901, 0.899};
    const std::vector<double> same{0.901, 0.899, 0.900, 0.902, 0.898};
    const std::vector<double> worse{0.880, 0.882, 0.878, 0.881, 0.879};
    const auto v = pairVerdicts({base, same, worse}, {{0, 1}, {0, 2}, {1, 2}}, 0.005);
    EXPECT_EQ(v[0].verdict, Verdict::Equivalent);
    EXPECT_EQ(v[1].verdict, Verdict::Different);
    EXPECT_LT(v[1].test->difference, 0);
    EXPECT_EQ(v[2].verdict, Verdict::Different);
    // Holm's adjustment never lowers a p-value.
    for (const PairVerdict& p : v) {
        EXPECT_GE(p.pEquivalentAdjusted, p.test->pEquivalent);
        EXPECT_GE(p.pDifferentAdjusted, p.test->pDifferent);
    }
}

TEST(Equivalence, FewerThanTwoSeedsCannotBeTestedAndABadMarginIsRefused)
{
    const auto v = pairVerdicts({{0.9}, {0.91, 0.92}}, {{0, 1}}, 0.005);
    EXPECT_EQ(v[0].verdict, Verdict::CannotTest);
    EXPECT_FALSE(v[0].test);
    EXPECT_THROW(equivalenceTest(kA, kB, 0.0), std::invalid_argument);
    EXPECT_THROW(equivalenceTest(kA, kB, -1.0), std::invalid_argument);
    EXPECT_THROW(equivalenceTest(kA, kB, NAN), std::invalid_argument);
}

TEST(Equivalence, SamplesWithoutSpreadAreDecidedExactly)
{
    const auto same = equivalenceTest({1, 1, 1}, {1, 1}, 0.1);
    EXPECT_EQ(same->pEquivalent, 0.0);
    EXPECT_EQ(same->pDifferent, 1.0);
    const auto apart = equivalenceTest({1, 1, 1}, {2, 2}, 0.1);
    EXPECT_EQ(apart->pEquivalent, 1.0);
    EXPECT_EQ(apart->pDifferent, 0.0);
    EXPECT_EQ(seedsPerArmToDecide(0.5, 0.0, 0.1), 0);
}

namespace {

// kA and kA + d, d = 0.5 + {-0.2, -0.4, 0, 0.4, 0.2}: the differences have mean 0.5 and variance
// 0.4 / 4 = 0.1, so the paired standard error is sqrt(0.1 / 5) and the statistics are t's with 4
// degrees of freedom, while the arms' own spread (variance 2.5) is the unpaired test's.
const std::vector<double> kPairedB{1.3, 2.1, 3.5, 4.9, 5.7};
// t-table, 4 degrees of freedom: upper 5% point 2.132, upper 2.5% point 2.776.
constexpr double kT4Upper5 = 2.132;
constexpr double kT4Upper2_5 = 2.776;

} // namespace

TEST(Equivalence, APairedTestWorksOnTheSeedBySeedDifferences)
{
    const auto t = pairedEquivalenceTest(kA, kPairedB, 1.0);
    ASSERT_TRUE(t);
    EXPECT_TRUE(t->paired);
    EXPECT_EQ(t->nA, 5);
    EXPECT_NEAR(t->difference, 0.5, 1e-12);
    const double se = std::sqrt(0.1 / 5);
    EXPECT_NEAR(t->se, se, 1e-12);
    EXPECT_DOUBLE_EQ(t->df, 4.0);
    EXPECT_NEAR(t->equivalenceLow, 0.5 - kT4Upper5 * se, 1e-3);
    EXPECT_NEAR(t->equivalenceHigh, 0.5 + kT4Upper5 * se, 1e-3);
    EXPECT_NEAR(t->differenceLow, 0.5 - kT4Upper2_5 * se, 1e-3);
    EXPECT_NEAR(t->differenceHigh, 0.5 + kT4Upper2_5 * se, 1e-3);
    // The sample size formula counts pairs: sd(d) / sqrt(2) in place of the pooled sd.
    EXPECT_NEAR(t->pooledSd, std::sqrt(0.1 / 2), 1e-12);
    // Equivalent within 1 paired (90% interval [0.20, 0.80]); unpaired, the arms' spread leaves
    // the same difference undecided.
    EXPECT_LT(t->pEquivalent, 0.05);
    EXPECT_GT(equivalenceTest(kA, kPairedB, 1.0)->pEquivalent, 0.05);
    EXPECT_THROW(pairedEquivalenceTest(kA, {1, 2}, 1.0), std::invalid_argument);
    EXPECT_FALSE(pairedEquivalenceTest({1}, {2}, 1.0));
}

TEST(Equivalence, KeyedSamplesArePairedOnTheSeedsTheyShare)
{
    // The same values under seeds listed in another order in each arm: matched by seed.
    const KeyedSample a{{4, 0, 1, 2, 3}, {5, 1, 2, 3, 4}};
    const KeyedSample b{{0, 1, 2, 3, 4}, {1.3, 2.1, 3.5, 4.9, 5.7}};
    const auto [matchedA, matchedB] = matchedValues(a, b);
    EXPECT_EQ(matchedA, kA);
    EXPECT_EQ(matchedB, kPairedB);
    const auto paired = pairVerdicts(std::vector<KeyedSample>{a, b}, {{0, 1}}, 1.0);
    ASSERT_TRUE(paired[0].test);
    EXPECT_TRUE(paired[0].test->paired);
    EXPECT_EQ(paired[0].verdict, Verdict::Equivalent);
    // A seed only one arm ran is left out of the pairs.
    const KeyedSample extra{{0, 1, 2, 3, 4, 9}, {1.3, 2.1, 3.5, 4.9, 5.7, 100}};
    EXPECT_EQ(pairVerdicts(std::vector<KeyedSample>{a, extra}, {{0, 1}}, 1.0)[0].test->nB, 5);
    // Arms that share fewer than two seeds, or carry no seeds, are compared unpaired.
    const KeyedSample other{{10, 11, 12, 13, 14}, kPairedB};
    const KeyedSample unkeyed{{}, kPairedB};
    for (const KeyedSample& b2 : {other, unkeyed}) {
        const auto unpaired = pairVerdicts(std::vector<KeyedSample>{a, b2}, {{0, 1}}, 1.0);
        ASSERT_TRUE(unpaired[0].test);
        EXPECT_FALSE(unpaired[0].test->paired);
        EXPECT_EQ(unpaired[0].verdict, Verdict::Inconclusive);
    }
}
