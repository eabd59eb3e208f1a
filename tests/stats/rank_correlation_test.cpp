// Spearman's rank correlation against values worked out by hand (the Pearson correlation of
// the ranks, ties at their mean rank), and the samples it declines.
#include "stats/rank_correlation.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mantissa::stats;

TEST(RankCorrelation, MatchesTheRanksPearsonCorrelationWithTies)
{
    // Ranks of b: 1, 2, 3.5, 5, 3.5; sum of products of deviations 8, of squares 10 and 9.5.
    const std::optional<double> r = spearmanCorrelation({1, 2, 3, 4, 5}, {5, 6, 7, 8, 7});
    ASSERT_TRUE(r.has_value());
    EXPECT_NEAR(*r, 8.0 / std::sqrt(95.0), 1e-12);
}

TEST(RankCorrelation, IsOneForAnyIncreasingMapAndMinusOneReversed)
{
    EXPECT_NEAR(*spearmanCorrelation({0.1, 3, 2, 50}, {1e-6, 9, 4, 2500}), 1.0, 1e-12);
    EXPECT_NEAR(*spearmanCorrelation({1, 2, 3}, {30, 20, 10}), -1.0, 1e-12);
}

TEST(RankCorrelation, DeclinesWhatHasNoOrderingToCompare)
{
    EXPECT_FALSE(spearmanCorrelation({1}, {2}).has_value());
    EXPECT_FALSE(spearmanCorrelation({1, 2}, {1, 2, 3}).has_value());
    EXPECT_FALSE(spearmanCorrelation({1, 2, 3}, {4, 4, 4}).has_value());
    EXPECT_FALSE(spearmanCorrelation({1, NAN, 3}, {1, 2, 3}).has_value());
}
