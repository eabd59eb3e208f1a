#include "stats/sample_statistics.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_statistics_double.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace mantissa::stats {

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

void checkConfidence(double confidence)
{
    if (!(confidence > 0 && confidence < 1))
        throw std::invalid_argument("a confidence level lies strictly between 0 and 1");
}

// The two-sided critical value of Student's t: P(|T| <= t) = confidence.
double tCritical(double confidence, double df) { return gsl_cdf_tdist_Pinv(0.5 + confidence / 2, df); }

double sampleVariance(const std::vector<double>& values) { return gsl_stats_variance(values.data(), 1, values.size()); }

} // namespace

SampleSummary summarize(const std::vector<double>& values, double confidence)
{
    checkConfidence(confidence);
    if (values.empty())
        throw std::invalid_argument("summarize() needs at least one value");
    SampleSummary summary;
    summary.n = static_cast<int>(values.size());
    summary.mean = gsl_stats_mean(values.data(), 1, values.size());
    if (summary.n < 2) {
        summary.sd = summary.ciLow = summary.ciHigh = kNan;
        return summary;
    }
    summary.sd = gsl_stats_sd_m(values.data(), 1, values.size(), summary.mean);
    const double half = tCritical(confidence, summary.n - 1) * summary.sd / std::sqrt(double(summary.n));
    summary.ciLow = summary.mean - half;
    summary.ciHigh = summary.mean + half;
    return summary;
}

std::optional<WelchTest> welchTest(const std::vector<double>& a, const std::vector<double>& b, double confidence)
{
    checkConfidence(confidence);
    if (a.size() < 2 || b.size() < 2)
        return std::nullopt;
    const double na = double(a.size()), nb = double(b.size());
    const double va = sampleVariance(a) / na, vb = sampleVariance(b) / nb;
    WelchTest test;
    test.difference = gsl_stats_mean(b.data(), 1, b.size()) - gsl_stats_mean(a.data(), 1, a.size());
    const double se = std::sqrt(va + vb);
    if (se == 0) {
        test.df = na + nb - 2;
        test.t = test.difference == 0 ? 0 : std::copysign(std::numeric_limits<double>::infinity(), test.difference);
        test.p = test.difference == 0 ? 1 : 0;
        return test;
    }
    // Welch-Satterthwaite.
    test.df = (va + vb) * (va + vb) / (va * va / (na - 1) + vb * vb / (nb - 1));
    test.t = test.difference / se;
    test.p = std::min(1.0, 2 * gsl_cdf_tdist_Q(std::fabs(test.t), test.df));
    test.halfWidth = tCritical(confidence, test.df) * se;
    return test;
}

ProportionInterval wilsonInterval(int k, int n, double confidence)
{
    checkConfidence(confidence);
    if (k < 0 || n < 0 || k > n)
        throw std::invalid_argument("a proportion needs 0 <= k <= n");
    ProportionInterval interval{k, n, 0, 1};
    if (n == 0)
        return interval;
    const double z = gsl_cdf_ugaussian_Pinv(0.5 + confidence / 2);
    const double nn = n, p = k / nn, z2 = z * z;
    const double centre = (p + z2 / (2 * nn)) / (1 + z2 / nn);
    const double half = z / (1 + z2 / nn) * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn));
    interval.low = std::max(0.0, centre - half);
    interval.high = std::min(1.0, centre + half);
    return interval;
}

double fisherExactTest(int k1, int n1, int k2, int n2)
{
    if (k1 < 0 || k2 < 0 || k1 > n1 || k2 > n2)
        throw std::invalid_argument("a proportion needs 0 <= k <= n");
    // Given the margins, k1 is hypergeometric: n1 draws from n1 + n2 runs of which k1 + k2 count.
    const unsigned successes = unsigned(k1 + k2), failures = unsigned(n1 + n2 - k1 - k2);
    const unsigned draws = unsigned(n1);
    const double observed = gsl_ran_hypergeometric_pdf(unsigned(k1), successes, failures, draws);
    const unsigned lowest = draws > failures ? draws - failures : 0;
    const unsigned highest = std::min(successes, draws);
    double p = 0;
    for (unsigned x = lowest; x <= highest; ++x) {
        const double probability = gsl_ran_hypergeometric_pdf(x, successes, failures, draws);
        // The relative tolerance keeps tables exactly as likely as the observed one (ties) in,
        // whatever the rounding; R's fisher.test uses the same 1e-7.
        if (probability <= observed * (1 + 1e-7))
            p += probability;
    }
    return std::min(1.0, p);
}

} // namespace mantissa::stats
