#include "stats/equivalence.h"

#include "stats/sample_statistics.h"

#include <gsl/gsl_cdf.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace mantissa::stats {

namespace {

double variance(const std::vector<double>& v)
{
    const double sd = summarize(v).sd;
    return sd * sd;
}

} // namespace

std::optional<EquivalenceTest> equivalenceTest(const std::vector<double>& a, const std::vector<double>& b,
                                               double margin, double alpha)
{
    if (!std::isfinite(margin) || margin <= 0)
        throw std::invalid_argument("the equivalence margin must be a positive number");
    if (!(alpha > 0 && alpha < 0.5))
        throw std::invalid_argument("the significance level must be between 0 and 0.5");
    if (a.size() < 2 || b.size() < 2)
        return std::nullopt;
    EquivalenceTest t;
    t.nA = static_cast<int>(a.size());
    t.nB = static_cast<int>(b.size());
    t.margin = margin;
    const double va = variance(a), vb = variance(b);
    const double qa = va / t.nA, qb = vb / t.nB;
    t.difference = summarize(b).mean - summarize(a).mean;
    t.se = std::sqrt(qa + qb);
    t.pooledSd = std::sqrt((va + vb) / 2);
    if (t.se == 0) {
        // No spread in either arm: the difference is known exactly.
        t.df = INFINITY;
        t.pEquivalent = std::fabs(t.difference) < margin ? 0.0 : 1.0;
        t.pDifferent = t.difference != 0 ? 0.0 : 1.0;
        t.equivalenceLow = t.equivalenceHigh = t.differenceLow = t.differenceHigh = t.difference;
        return t;
    }
    // Welch-Satterthwaite degrees of freedom.
    t.df = (qa + qb) * (qa + qb) / (qa * qa / (t.nA - 1) + qb * qb / (t.nB - 1));
    // H0: d <= -margin against d > -margin, and H0: d >= margin against d < margin.
    const double pAboveLower = gsl_cdf_tdist_Q((t.difference + margin) / t.se, t.df);
    const double pBelowUpper = gsl_cdf_tdist_P((t.difference - margin) / t.se, t.df);
    t.pEquivalent = std::max(pAboveLower, pBelowUpper);
    t.pDifferent = 2 * gsl_cdf_tdist_Q(std::fabs(t.difference) / t.se, t.df);
    const double tEquivalence = gsl_cdf_tdist_Qinv(alpha, t.df);
    const double tDifference = gsl_cdf_tdist_Qinv(alpha / 2, t.df);
    t.equivalenceLow = t.difference - tEquivalence * t.se;
    t.equivalenceHigh = t.difference + tEquivalence * t.se;
    t.differenceLow = t.difference - tDifference * t.se;
    t.differenceHigh = t.difference + tDifference * t.se;
    return t;
}

std::vector<double> holmAdjusted(const std::vector<double>& p)
{
    const std::size_t m = p.size();
    std::vector<std::size_t> order(m);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return p[x] < p[y]; });
    std::vector<double> adjusted(m);
    double running = 0;
    for (std::size_t rank = 0; rank < m; ++rank) {
        running = std::max(running, std::min(1.0, static_cast<double>(m - rank) * p[order[rank]]));
        adjusted[order[rank]] = running;
    }
    return adjusted;
}

int seedsPerArmToDecide(double difference, double sd, double margin, double alpha)
{
    if (!(sd > 0))
        return 0;
    constexpr double kPower = 0.8;
    const double distance = std::fabs(difference) < margin ? margin - std::fabs(difference) : std::fabs(difference);
    // Equivalence is one-sided at each bound (z of 1 - alpha); a difference two-sided.
    const double zAlpha =
        std::fabs(difference) < margin ? gsl_cdf_ugaussian_Qinv(alpha) : gsl_cdf_ugaussian_Qinv(alpha / 2);
    // With no observed difference both one-sided tests must pass: power split between them.
    const double zPower =
        difference == 0 ? gsl_cdf_ugaussian_Qinv((1 - kPower) / 2) : gsl_cdf_ugaussian_Qinv(1 - kPower);
    const double n = 2 * sd * sd * (zAlpha + zPower) * (zAlpha + zPower) / (distance * distance);
    return std::max(2, static_cast<int>(std::ceil(n)));
}

std::vector<PairVerdict> pairVerdicts(const std::vector<std::vector<double>>& samples,
                                      const std::vector<std::pair<int, int>>& pairs, double margin, double alpha)
{
    std::vector<PairVerdict> verdicts(pairs.size());
    std::vector<double> pEquivalent, pDifferent;
    std::vector<std::size_t> tested;
    for (std::size_t k = 0; k < pairs.size(); ++k) {
        const auto [i, j] = pairs[k];
        verdicts[k].test = equivalenceTest(samples.at(static_cast<std::size_t>(i)),
                                           samples.at(static_cast<std::size_t>(j)), margin, alpha);
        if (!verdicts[k].test)
            continue;
        tested.push_back(k);
        pEquivalent.push_back(verdicts[k].test->pEquivalent);
        pDifferent.push_back(verdicts[k].test->pDifferent);
    }
    const std::vector<double> equivalentAdjusted = holmAdjusted(pEquivalent);
    const std::vector<double> differentAdjusted = holmAdjusted(pDifferent);
    for (std::size_t t = 0; t < tested.size(); ++t) {
        PairVerdict& v = verdicts[tested[t]];
        v.pEquivalentAdjusted = equivalentAdjusted[t];
        v.pDifferentAdjusted = differentAdjusted[t];
        if (v.pEquivalentAdjusted < alpha)
            v.verdict = Verdict::Equivalent;
        else if (v.pDifferentAdjusted < alpha)
            v.verdict = Verdict::Different;
        else {
            v.verdict = Verdict::Inconclusive;
            v.seedsToDecide = seedsPerArmToDecide(v.test->difference, v.test->pooledSd, margin, alpha);
        }
    }
    return verdicts;
}

} // namespace mantissa::stats
