#pragma once
// The statistics of a sweep's results, as every front end shows them, on the runs' task's metric
// (engine/observe/task_metric.h: test accuracy, RMSE or bits per character): mean, sd and 95%
// interval of each final metric over the runs that did not diverge (a diverged run's numbers
// are those of a broken run; the divergence rate counts them), the divergence rate k of n with
// Wilson's interval, and a plain sentence per configuration against the first (the baseline).
// The figures come from Mantissa::stats (GSL); this file only chooses and formats them.
#include "engine/observe/task_metric.h"
#include "stats/comparison_text.h"
#include "sweep/sweep_results.h"

#include <QStringList>

#include <functional>
#include <optional>
#include <string_view>

namespace mantissa::sweep {

// A final metric: its JSON key, its row label, how a sentence names it, where a run keeps it.
struct SweepMetric {
    const char* key; // "final_test_accuracy"
    QString label;   // "test accuracy (%)"
    stats::MetricFormat format;
    std::function<std::optional<double>(const storage::RunInfo&)> value;
};

// The metric the results are judged by: their runs' task's when every run has the same one
// (from its stored config), else accuracy.
TaskMetric sweepTaskMetric(const std::vector<ConfigurationResults>& results);

// The final metrics of runs judged by `metric`: the test metric at the last epoch and at its best
// ("final_test_accuracy", "best_test_accuracy"; "final_test_rmse", "best_test_rmse";
// "final_test_bits_per_character", "best_test_bits_per_character"), then the train loss,
// skipped steps, final loss scale, throughput and time.
const std::vector<SweepMetric>& sweepMetrics(TaskMetric metric = TaskMetric::Accuracy);
// The first of them: the final test metric.
const SweepMetric& finalTestMetric(TaskMetric metric);
// Asserts that `key` is one of the sweepMetrics() of some task.
const SweepMetric& sweepMetric(std::string_view key);
// The keys of every task's sweepMetrics(), each once, in that order (accuracy's first): what a
// study may compare.
const std::vector<std::string>& everySweepMetricKey();

// The metric over the configuration's finished runs (finite values only).
std::vector<double> metricValues(const ConfigurationResults& results, const SweepMetric& metric);
// The same, each value with its run's seed: what pairs two configurations' runs seed by seed.
// A run without a seed in its config, or a seed that repeats in the configuration, leaves the
// keys empty: that configuration is then compared unpaired.
stats::KeyedSample keyedMetricValues(const ConfigurationResults& results, const SweepMetric& metric);

// "78.1 +/- 4.2 [74.6, 81.6]": mean, sd and (withInterval) the 95% interval of the mean, in
// the metric's scale; the mean alone for one value, "-" for none.
QString meanSdText(const std::vector<double>& values, double scale, int decimals, bool withInterval);
// "3 of 8 [14%, 69%]": diverged runs of those that are a result, Wilson's 95% interval.
QString divergenceText(const ConfigurationResults& results);

// One row per final metric (with values in some configuration), after a "runs" row and a
// "diverged" row; a column per configuration after the row label.
struct StatisticsTable {
    QStringList header;
    QList<QStringList> rows;
};
StatisticsTable statisticsTable(const std::vector<ConfigurationResults>& results);

// The margins within which two configurations count as equivalent, in each metric's stored
// scale (test accuracy in [0, 1]: 0.005 is 0.5 points; RMSE in the targets' unit).
struct EquivalenceMargins {
    double testAccuracy = 0.005;
    double testRmse = 0.01;
    double testBitsPerCharacter = 0.01;
    double trainLoss = 0.01;

    // The margin of the test metric of runs judged by `metric`.
    double testMetric(TaskMetric metric) const;
    double& testMetric(TaskMetric metric);
};

// One pair's verdict on one metric: configurations [baseline] and [other] of the results. Where
// both ran at least two of the same seeds, the test is paired over those seeds (equivalence.h),
// and the counts are the pairs.
struct PairVerdictRecord {
    std::size_t baseline = 0, other = 0;
    const SweepMetric* metric = nullptr;
    double margin = 0;
    std::size_t baselineCount = 0, otherCount = 0;
    stats::PairVerdict verdict;
};
// Every pair (each configuration against every earlier one) on the final test metric
// (sweepTaskMetric) and the train loss, where both have values; Holm's correction runs over the
// pairs of each metric.
std::vector<PairVerdictRecord> pairVerdicts(const std::vector<ConfigurationResults>& results,
                                            const EquivalenceMargins& margins = {});
// The same over any metrics, each with its margin (in the metric's stored scale); Holm's
// correction runs over the pairs of each metric. The records point at the given metrics.
using MetricMargin = std::pair<const SweepMetric*, double>;
std::vector<PairVerdictRecord> pairVerdicts(const std::vector<ConfigurationResults>& results,
                                            const std::vector<MetricMargin>& metrics);
// "equivalent", "better", "worse", "inconclusive" or "undecidable", as the JSON output says it.
const char* verdictName(const PairVerdictRecord& record);

// How pairSentences decides, in one sentence for the CLI, the Comparison tab and reports, for
// runs judged by `metric`.
QString verdictRule(const EquivalenceMargins& margins = {}, TaskMetric metric = TaskMetric::Accuracy);

// For every pair of configurations (each against every earlier one), the equivalence verdict
// on the final test metric and the train loss (stats/equivalence.h, Holm-adjusted over the pairs),
// and the divergence (Fisher's exact test) when a run of either diverged.
QStringList pairSentences(const std::vector<ConfigurationResults>& results, const EquivalenceMargins& margins = {});

} // namespace mantissa::sweep
