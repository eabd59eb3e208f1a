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

namespace {

void checkArguments(double margin, double alpha)
{
    if (!std::isfinite(margin) || margin <= 0)
        throw std::invalid_argument("the equivalence margin must be a positive number");
    if (!(alpha > 0 && alpha < 0.5))
        throw std::invalid_argument("the significance level must be between 0 and 0.5");
}

// The tests and intervals from t.difference, t.se and t.df.
void finishTest(EquivalenceTest& t, double alpha)
{
    if (t.se == 0) {
        // No spread: the difference is known exactly.
        t.df = INFINITY;
        t.pEquivalent = std::fabs(t.difference) < t.margin ? 0.0 : 1.0;
        t.pDifferent = t.difference != 0 ? 0.0 : 1.0;
        t.equivalenceLow = t.equivalenceHigh = t.differenceLow = t.differenceHigh = t.difference;
        return;
    }
    // H0: d <= -margin against d > -margin, and H0: d >= margin against d < margin.
    const double pAboveLower = gsl_cdf_tdist_Q((t.difference + t.margin) / t.se, t.df);
    const double pBelowUpper = gsl_cdf_tdist_P((t.difference - t.margin) / t.se, t.df);
    t.pEquivalent = std::max(pAboveLower, pBelowUpper);
    t.pDifferent = 2 * gsl_cdf_tdist_Q(std::fabs(t.difference) / t.se, t.df);
    const double tEquivalence = gsl_cdf_tdist_Qinv(alpha, t.df);
    const double tDifference = gsl_cdf_tdist_Qinv(alpha / 2, t.df);
    t.equivalenceLow = t.difference - tEquivalence * t.se;
    t.equivalenceHigh = t.difference + tEquivalence * t.se;
    t.differenceLow = t.difference - tDifference * t.se;
    t.differenceHigh = t.difference + tDifference * t.se;
}

} // namespace

std::optional<EquivalenceTest> equivalenceTest(const std::vector<double>& a, const std::vector<double>& b,
                                               double margin, double alpha)
{
    checkArguments(margin, alpha);
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
    // Welch-Satterthwaite degrees of freedom.
    if (t.se > 0)
        t.df = (qa + qb) * (qa + qb) / (qa * qa / (t.nA - 1) + qb * qb / (t.nB - 1));
    finishTest(t, alpha);
    return t;
}

std::optional<EquivalenceTest> pairedEquivalenceTest(const std::vector<double>& a, const std::vector<double>& b,
                                                     double margin, double alpha)
{
    checkArguments(margin, alpha);
    if (a.size() != b.size())
        throw std::invalid_argument("paired samples must have the same size");
    if (a.size() < 2)
        return std::nullopt;
    std::vector<double> differences(a.size());
    for (std::size_t k = 0; k < a.size(); ++k)
        differences[k] = b[k] - a[k];
    const SampleSummary d = summarize(differences);
    EquivalenceTest t;
    t.paired = true;
    t.nA = t.nB = static_cast<int>(a.size());
    t.margin = margin;
    t.difference = d.mean;
    t.se = d.sd / std::sqrt(static_cast<double>(a.size()));
    t.df = static_cast<double>(a.size()) - 1;
    t.pooledSd = d.sd / std::sqrt(2.0);
    finishTest(t, alpha);
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

namespace {

// Holm's correction over the tested pairs, then each pair's verdict.
std::vector<PairVerdict> decide(std::vector<PairVerdict> verdicts, double margin, double alpha)
{
    std::vector<double> pEquivalent, pDifferent;
    std::vector<std::size_t> tested;
    for (std::size_t k = 0; k < verdicts.size(); ++k) {
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
            // At the level Holm's first step asks of one pair among them all, so that the seeds
            // it names would decide the pair within this comparison.
            // The normal approximation can fall below the seeds already run (few seeds, t's
            // heavy tails): those did not decide, so at least one more is needed.
            v.verdict = Verdict::Inconclusive;
            v.seedsToDecide = std::max(seedsPerArmToDecide(v.test->difference, v.test->pooledSd, margin,
                                                           alpha / static_cast<double>(tested.size())),
                                       std::max(v.test->nA, v.test->nB) + 1);
        }
    }
    return verdicts;
}

} // namespace

std::vector<PairVerdict> pairVerdicts(const std::vector<std::vector<double>>& samples,
                                      const std::vector<std::pair<int, int>>& pairs, double margin, double alpha)
{
    std::vector<PairVerdict> verdicts(pairs.size());
    for (std::size_t k = 0; k < pairs.size(); ++k) {
        const auto [i, j] = pairs[k];
        verdicts[k].test = equivalenceTest(samples.at(static_cast<std::size_t>(i)),
                                           samples.at(static_cast<std::size_t>(j)), margin, alpha);
    }
    return decide(std::move(verdicts), margin, alpha);
}

std::pair<std::vector<double>, std::vector<double>> matchedValues(const KeyedSample& a, const KeyedSample& b)
{
    std::vector<std::pair<long long, std::pair<double, double>>> matched;
    for (std::size_t x = 0; x < a.keys.size(); ++x)
        for (std::size_t y = 0; y < b.keys.size(); ++y)
            if (a.keys[x] == b.keys[y])
                matched.push_back({a.keys[x], {a.values.at(x), b.values.at(y)}});
    std::sort(matched.begin(), matched.end(), [](const auto& l, const auto& r) { return l.first < r.first; });
    std::pair<std::vector<double>, std::vector<double>> values;
    for (const auto& [key, pair] : matched) {
        values.first.push_back(pair.first);
        values.second.push_back(pair.second);
    }
    return values;
}

std::vector<PairVerdict> pairVerdicts(const std::vector<KeyedSample>& samples,
                                      const std::vector<std::pair<int, int>>& pairs, double margin, double alpha)
{
    std::vector<PairVerdict> verdicts(pairs.size());
    for (std::size_t k = 0; k < pairs.size(); ++k) {
        const KeyedSample& a = samples.at(static_cast<std::size_t>(pairs[k].first));
        const KeyedSample& b = samples.at(static_cast<std::size_t>(pairs[k].second));
        const auto [matchedA, matchedB] = matchedValues(a, b);
        verdicts[k].test = matchedA.size() >= 2 ? pairedEquivalenceTest(matchedA, matchedB, margin, alpha)
                                                : equivalenceTest(a.values, b.values, margin, alpha);
    }
    return decide(std::move(verdicts), margin, alpha);
}

} // namespace mantissa::stats
