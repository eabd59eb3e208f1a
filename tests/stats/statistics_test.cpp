// The statistics of a sweep against values published or worked out independently of GSL:
// R's t.test on the sleep data (Student 1908), Newcombe (1998, Table I) for Wilson's interval,
// and Fisher's exact test from the hypergeometric probabilities counted by hand.
#include "stats/comparison_text.h"
#include "stats/sample_statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

using namespace mantissa::stats;

namespace {

// R: sleep$extra by group.
const std::vector<double> kSleep1 = {0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0};
const std::vector<double> kSleep2 = {1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4};

} // namespace

TEST(Statistics, MeanAndConfidenceIntervalMatchR)
{
    // t.test(sleep$extra[sleep$group == 1]): mean 0.75, 95% CI -0.5297804 to 2.0297804.
    const SampleSummary s = summarize(kSleep1);
    EXPECT_EQ(s.n, 10);
    EXPECT_NEAR(s.mean, 0.75, 1e-12);
    EXPECT_NEAR(s.sd, 1.7890096577591625, 1e-12);
    EXPECT_NEAR(s.ciLow, -0.5297804, 1e-7);
    EXPECT_NEAR(s.ciHigh, 2.0297804, 1e-7);
    const SampleSummary one = summarize({0.5});
    EXPECT_EQ(one.mean, 0.5);
    EXPECT_TRUE(std::isnan(one.sd));
    EXPECT_TRUE(std::isnan(one.ciLow));
    EXPECT_THROW(summarize({}), std::invalid_argument);
}

TEST(Statistics, WelchTestMatchesR)
{
    // t.test(extra ~ group, data = sleep): t = -1.8608, df = 17.776, p-value = 0.07939,
    // 95% CI of mean1 - mean2: -3.3654832 to 0.2054832.
    const auto test = welchTest(kSleep1, kSleep2);
    ASSERT_TRUE(test);
    EXPECT_NEAR(test->difference, 1.58, 1e-12);
    EXPECT_NEAR(test->t, 1.860813467, 1e-8);
    EXPECT_NEAR(test->df, 17.776473516, 1e-8);
    EXPECT_NEAR(test->p, 0.07939, 5e-6);
    EXPECT_NEAR(test->halfWidth, (0.2054832 + 3.3654832) / 2, 1e-7);
    EXPECT_FALSE(welchTest({1.0}, kSleep2));

    const auto same = welchTest({0.8, 0.8, 0.8}, {0.8, 0.8});
    ASSERT_TRUE(same);
    EXPECT_EQ(same->p, 1);
    const auto apart = welchTest({0.8, 0.8}, {0.9, 0.9});
    ASSERT_TRUE(apart);
    EXPECT_EQ(apart->p, 0);
    EXPECT_TRUE(std::isinf(apart->t));
}

TEST(Statistics, WilsonIntervalMatchesNewcombe)
{
    struct Case {
        int k, n;
        double low, high;
    };
    for (const Case& c : {Case{81, 263, 0.2553, 0.3662}, Case{15, 148, 0.0624, 0.1605}, Case{0, 20, 0.0, 0.1611},
                          Case{1, 29, 0.0061, 0.1718}}) {
        const ProportionInterval interval = wilsonInterval(c.k, c.n);
        EXPECT_NEAR(interval.low, c.low, 5e-5) << c.k << "/" << c.n;
        EXPECT_NEAR(interval.high, c.high, 5e-5) << c.k << "/" << c.n;
    }
    const ProportionInterval all = wilsonInterval(8, 8);
    EXPECT_EQ(all.high, 1.0);
    EXPECT_NEAR(all.low, 1 - 0.3244, 1e-4); // the mirror image of 0 of 8: [0, 0.3244]
    EXPECT_EQ(wilsonInterval(0, 0).high, 1.0);
    EXPECT_THROW(wilsonInterval(3, 2), std::invalid_argument);
}

TEST(Statistics, FisherExactTestByCounting)
{
    // 3 of 8 vs 0 of 8: tables with x = 0..3 in the first row have probabilities
    // C(3,x) C(13,8-x) / C(16,8) = 0.1, 0.4, 0.4, 0.1; the observed (0.1) and its mirror count.
    EXPECT_NEAR(fisherExactTest(3, 8, 0, 8), 0.2, 1e-12);
    EXPECT_NEAR(fisherExactTest(0, 8, 3, 8), 0.2, 1e-12);
    // Fisher's tea: 3 of 4 vs 1 of 4, p = 34/70.
    EXPECT_NEAR(fisherExactTest(3, 4, 1, 4), 34.0 / 70, 1e-12);
    // 8 of 8 vs 0 of 8: 2 / C(16, 8).
    EXPECT_NEAR(fisherExactTest(8, 8, 0, 8), 2.0 / 12870, 1e-15);
    EXPECT_NEAR(fisherExactTest(2, 8, 2, 8), 1.0, 1e-12);
}

TEST(ComparisonText, Sentences)
{
    const MetricFormat hours{"extra sleep", 1, "hours", 2};
    EXPECT_EQ(describeDifference("drug 2", "drug 1", hours, kSleep1, kSleep2),
              "drug 2 vs drug 1: extra sleep +1.58 +/- 1.79 hours, not significant (Welch's t-test, p = 0.079, n = 10 "
              "each)");
    const MetricFormat accuracy{"test accuracy", 100, "points", 1};
    // By hand: variances 0.0002/4 and 0.0001/3, Welch df = 5.0, t(0.975, 5) = 2.5706 (tables),
    // half-width 2.5706 * sqrt(0.0000833) = 0.0235.
    EXPECT_EQ(describeDifference("mixed-fp16", "fp32", accuracy, {0.80, 0.81, 0.83, 0.80}, {0.70, 0.71, 0.72}),
              "mixed-fp16 vs fp32: test accuracy -10.0 +/- 2.3 points, significant (Welch's t-test, p < 0.001, n = 3 "
              "and 4)");
    EXPECT_EQ(describeDifference("b", "a", accuracy, {0.5}, {0.6, 0.7}),
              "b vs a: test accuracy +15.0 points, no test (n = 2 and 1; a test needs at least 2 runs of each)");
    EXPECT_EQ(describeDifference("b", "a", accuracy, {0.5, 0.5}, {0.5, 0.5}),
              "b vs a: test accuracy +0.0 +/- 0.0 points, no difference (every run gave the same value, n = 2 each)");
    EXPECT_EQ(describeDifference("b", "a", accuracy, {0.5, 0.5}, {}),
              "b vs a: test accuracy not compared (no run of b has it)");
    EXPECT_EQ(describeDivergence("fp16", "mixed-fp16", 0, 8, 3, 8),
              "fp16 vs mixed-fp16: diverged 3 of 8 vs 0 of 8, not significant (Fisher's exact test, p = 0.2)");
    EXPECT_EQ(describeDivergence("fp16", "mixed-fp16", 0, 8, 8, 8),
              "fp16 vs mixed-fp16: diverged 8 of 8 vs 0 of 8, significant (Fisher's exact test, p < 0.001)");
    EXPECT_EQ(formatP(0.0212), "p = 0.021");
}
