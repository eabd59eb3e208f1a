#include "stats/comparison_text.h"

#include "stats/sample_statistics.h"

#include <cmath>
#include <cstdio>

namespace mantissa::stats {

namespace {

constexpr double kAlpha = 0.05;

std::string format(const char* pattern, double value, int decimals)
{
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, pattern, decimals, value);
    return buffer;
}

std::string sampleSizes(std::size_t a, std::size_t b)
{
    return a == b ? "n = " + std::to_string(a) + " each" : "n = " + std::to_string(b) + " and " + std::to_string(a);
}

std::string verdict(double p) { return p < kAlpha ? "significant" : "not significant"; }

} // namespace

std::string formatP(double p)
{
    if (p < 0.001)
        return "p < 0.001";
    // Two significant digits: 0.41, 0.021, 0.0012.
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "p = %.2g", p);
    return buffer;
}

std::string describeDifference(const std::string& otherLabel, const std::string& baselineLabel,
                               const MetricFormat& metric, const std::vector<double>& baseline,
                               const std::vector<double>& other)
{
    const std::string head = otherLabel + " vs " + baselineLabel + ": " + metric.name + " ";
    const std::string unit = metric.unit.empty() ? "" : " " + metric.unit;
    if (baseline.empty() || other.empty())
        return head + "not compared (no run of " + (other.empty() ? otherLabel : baselineLabel) + " has it)";
    const auto test = welchTest(baseline, other);
    if (!test) {
        const double difference = summarize(other).mean - summarize(baseline).mean;
        return head + format("%+.*f", difference * metric.scale, metric.decimals) + unit + ", no test (" +
               sampleSizes(baseline.size(), other.size()) + "; a test needs at least 2 runs of each)";
    }
    std::string text = head + format("%+.*f", test->difference * metric.scale, metric.decimals) + " +/- " +
                       format("%.*f", test->halfWidth * metric.scale, metric.decimals) + unit + ", ";
    if (test->difference == 0 && test->p == 1 && test->halfWidth == 0)
        return text + "no difference (every run gave the same value, " + sampleSizes(baseline.size(), other.size()) +
               ")";
    return text + verdict(test->p) + " (Welch's t-test, " + formatP(test->p) + ", " +
           sampleSizes(baseline.size(), other.size()) + ")";
}

std::string describeVerdict(const std::string& otherLabel, const std::string& baselineLabel, const MetricFormat& metric,
                            const PairVerdict& verdict, double margin, std::size_t baselineCount,
                            std::size_t otherCount)
{
    const std::string head = otherLabel + " vs " + baselineLabel + ": " + metric.name + " ";
    const std::string unit = metric.unit.empty() ? "" : " " + metric.unit;
    const auto value = [&](double v, const char* pattern) {
        return format(pattern, v * metric.scale, metric.decimals);
    };
    const std::string marginText = "+/-" + value(margin, "%.*f") + unit;
    if (verdict.verdict == Verdict::CannotTest)
        return head + "cannot be decided: " + sampleSizes(baselineCount, otherCount) +
               ", and a verdict needs at least 2 runs of each";
    const EquivalenceTest& t = *verdict.test;
    // A paired test says over how many seeds; its tests are the paired ones.
    const std::string counts =
        t.paired ? "paired over " + std::to_string(t.nA) + " seeds" : sampleSizes(baselineCount, otherCount);
    const std::string tost = t.paired ? "paired TOST" : "TOST";
    const std::string tTest = t.paired ? "paired t-test" : "Welch's t-test";
    switch (verdict.verdict) {
    case Verdict::Equivalent:
        return head + "equivalent within " + marginText + " (difference " + value(t.difference, "%+.*f") + " [" +
               value(t.equivalenceLow, "%+.*f") + ", " + value(t.equivalenceHigh, "%+.*f") + "], " + tost +
               " with Holm's correction, " + formatP(verdict.pEquivalentAdjusted) + ", " + counts + ")";
    case Verdict::Different: {
        const bool better = (t.difference > 0) == metric.higherIsBetter;
        return head + (better ? "better" : "worse") + " by " + value(std::fabs(t.difference), "%.*f") + unit + " [" +
               value(std::fabs(t.difference) - (t.differenceHigh - t.difference), "%.*f") + ", " +
               value(std::fabs(t.difference) + (t.differenceHigh - t.difference), "%.*f") + "] (" + tTest +
               " with Holm's correction, " + formatP(verdict.pDifferentAdjusted) + ", " + counts + ")";
    }
    case Verdict::Inconclusive:
        return head + "inconclusive: about " + std::to_string(verdict.seedsToDecide) +
               " seeds per arm would decide it (difference " + value(t.difference, "%+.*f") + " [" +
               value(t.differenceLow, "%+.*f") + ", " + value(t.differenceHigh, "%+.*f") + "], margin " + marginText +
               ", " + counts + ")";
    case Verdict::CannotTest: break;
    }
    return head;
}

std::string describeDivergence(const std::string& otherLabel, const std::string& baselineLabel, int baselineK,
                               int baselineN, int otherK, int otherN)
{
    const double p = fisherExactTest(otherK, otherN, baselineK, baselineN);
    return otherLabel + " vs " + baselineLabel + ": diverged " + std::to_string(otherK) + " of " +
           std::to_string(otherN) + " vs " + std::to_string(baselineK) + " of " + std::to_string(baselineN) + ", " +
           verdict(p) + " (Fisher's exact test, " + formatP(p) + ")";
}

} // namespace mantissa::stats
