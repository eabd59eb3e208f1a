#include "sweep/sweep_statistics.h"

#include "engine/util/check.h"
#include "stats/sample_statistics.h"

#include <algorithm>
#include <cmath>

namespace mantissa::sweep {

using storage::RunInfo;

namespace {

// A loss-based metric (RMSE, bits per character) of a stored test loss.
std::optional<double> fromLoss(TaskMetric metric, const std::optional<double>& loss)
{
    return loss ? std::optional<double>(taskMetricValue(metric, *loss, NAN)) : std::nullopt;
}

// The final and best test metric of runs judged by `metric`.
std::vector<SweepMetric> testMetrics(TaskMetric metric)
{
    switch (metric) {
    case TaskMetric::Accuracy:
        return {{"final_test_accuracy",
                 QStringLiteral("test accuracy (%)"),
                 {"test accuracy", 100, "points", 1},
                 [](const RunInfo& r) { return r.summary.finalTestAccuracy; }},
                {"best_test_accuracy",
                 QStringLiteral("best test accuracy (%)"),
                 {"best test accuracy", 100, "points", 1},
                 [](const RunInfo& r) { return r.summary.bestTestAccuracy; }}};
    case TaskMetric::Rmse:
        return {{"final_test_rmse",
                 QStringLiteral("test RMSE"),
                 {"test RMSE", 1, "", 4, false},
                 [](const RunInfo& r) { return fromLoss(TaskMetric::Rmse, r.summary.finalTestLoss); }},
                {"best_test_rmse",
                 QStringLiteral("best test RMSE"),
                 {"best test RMSE", 1, "", 4, false},
                 [](const RunInfo& r) { return fromLoss(TaskMetric::Rmse, r.summary.bestTestLoss); }}};
    case TaskMetric::BitsPerCharacter:
        return {{"final_test_bits_per_character",
                 QStringLiteral("test bits per character"),
                 {"test bits per character", 1, "", 3, false},
                 [](const RunInfo& r) { return fromLoss(TaskMetric::BitsPerCharacter, r.summary.finalTestLoss); }},
                {"best_test_bits_per_character",
                 QStringLiteral("best test bits per character"),
                 {"best test bits per character", 1, "", 3, false},
                 [](const RunInfo& r) { return fromLoss(TaskMetric::BitsPerCharacter, r.summary.bestTestLoss); }}};
    }
    return {};
}

std::vector<SweepMetric> metricsOf(TaskMetric metric)
{
    std::vector<SweepMetric> list = testMetrics(metric);
    list.insert(list.end(), {
                                {"final_train_loss",
                                 QStringLiteral("train loss"),
                                 {"train loss", 1, "", 4, false},
                                 [](const RunInfo& r) { return r.summary.finalTrainLoss; }},
                                {"skipped_steps",
                                 QStringLiteral("skipped steps"),
                                 {"skipped steps", 1, "", 1, false},
                                 [](const RunInfo& r) {
                                     return r.summary.skippedSteps
                                                ? std::optional<double>(double(*r.summary.skippedSteps))
                                                : std::nullopt;
                                 }},
                                {"final_loss_scale",
                                 QStringLiteral("final loss scale"),
                                 {"final loss scale", 1, "", 0},
                                 [](const RunInfo& r) { return r.summary.finalLossScale; }},
                                {"samples_per_second",
                                 QStringLiteral("throughput (samples/s)"),
                                 {"throughput", 1, "samples/s", 0},
                                 [](const RunInfo& r) { return r.summary.samplesPerSecond; }},
                                {"wall_seconds",
                                 QStringLiteral("time (s)"),
                                 {"time", 1, "s", 1, false},
                                 [](const RunInfo& r) { return r.wallSeconds; }},
                            });
    return list;
}

constexpr TaskMetric kTaskMetrics[] = {TaskMetric::Accuracy, TaskMetric::Rmse, TaskMetric::BitsPerCharacter};

} // namespace

TaskMetric sweepTaskMetric(const std::vector<ConfigurationResults>& results)
{
    std::optional<TaskMetric> common;
    for (const ConfigurationResults& r : results)
        for (const RunInfo& run : r.runs) {
            const TaskMetric metric = taskMetricOfStored(run.configJson.toStdString());
            if (common && *common != metric)
                return TaskMetric::Accuracy; // one column cannot hold two units
            common = metric;
        }
    return common.value_or(TaskMetric::Accuracy);
}

const std::vector<SweepMetric>& sweepMetrics(TaskMetric metric)
{
    static const std::vector<SweepMetric> lists[] = {metricsOf(kTaskMetrics[0]), metricsOf(kTaskMetrics[1]),
                                                     metricsOf(kTaskMetrics[2])};
    for (std::size_t i = 0; i < std::size(kTaskMetrics); ++i)
        if (kTaskMetrics[i] == metric)
            return lists[i];
    return lists[0];
}

const SweepMetric& finalTestMetric(TaskMetric metric) { return sweepMetrics(metric).front(); }

const SweepMetric& sweepMetric(std::string_view key)
{
    for (TaskMetric task : kTaskMetrics)
        for (const SweepMetric& m : sweepMetrics(task))
            if (key == m.key)
                return m;
    MANTISSA_ASSERT(!"a sweep metric of sweepMetrics()");
    std::abort();
}

const std::vector<std::string>& everySweepMetricKey()
{
    static const std::vector<std::string> keys = [] {
        std::vector<std::string> list;
        for (TaskMetric task : kTaskMetrics)
            for (const SweepMetric& m : sweepMetrics(task))
                if (std::find(list.begin(), list.end(), m.key) == list.end())
                    list.emplace_back(m.key);
        return list;
    }();
    return keys;
}

double EquivalenceMargins::testMetric(TaskMetric metric) const
{
    return const_cast<EquivalenceMargins&>(*this).testMetric(metric);
}

double& EquivalenceMargins::testMetric(TaskMetric metric)
{
    switch (metric) {
    case TaskMetric::Rmse: return testRmse;
    case TaskMetric::BitsPerCharacter: return testBitsPerCharacter;
    case TaskMetric::Accuracy: break;
    }
    return testAccuracy;
}

namespace {

// The finished runs whose metric is finite, each with its value: what every statistic is over.
std::vector<std::pair<const RunInfo*, double>> finishedValues(const ConfigurationResults& results,
                                                              const SweepMetric& metric)
{
    std::vector<std::pair<const RunInfo*, double>> values;
    for (const RunInfo& run : results.runs) {
        if (run.status != RunStatus::Finished)
            continue;
        if (const auto value = metric.value(run); value && std::isfinite(*value))
            values.emplace_back(&run, *value);
    }
    return values;
}

} // namespace

std::vector<double> metricValues(const ConfigurationResults& results, const SweepMetric& metric)
{
    std::vector<double> values;
    for (const auto& [run, value] : finishedValues(results, metric))
        values.push_back(value);
    return values;
}

stats::KeyedSample keyedMetricValues(const ConfigurationResults& results, const SweepMetric& metric)
{
    stats::KeyedSample sample;
    bool keyed = true;
    for (const auto& [run, value] : finishedValues(results, metric)) {
        const std::optional<long long> seed = runSeed(*run);
        keyed = keyed && seed && std::find(sample.keys.begin(), sample.keys.end(), *seed) == sample.keys.end();
        if (keyed)
            sample.keys.push_back(*seed);
        sample.values.push_back(value);
    }
    if (!keyed)
        sample.keys.clear();
    return sample;
}

QString meanSdText(const std::vector<double>& values, double scale, int decimals, bool withInterval)
{
    if (values.empty())
        return QStringLiteral("-");
    const stats::SampleSummary s = stats::summarize(values);
    if (s.n < 2)
        return QString::number(s.mean * scale, 'f', decimals);
    QString text =
        QStringLiteral("%1 +/- %2").arg(s.mean * scale, 0, 'f', decimals).arg(s.sd * scale, 0, 'f', decimals);
    if (withInterval)
        text +=
            QStringLiteral(" [%1, %2]").arg(s.ciLow * scale, 0, 'f', decimals).arg(s.ciHigh * scale, 0, 'f', decimals);
    return text;
}

QString divergenceText(const ConfigurationResults& results)
{
    const int n = results.results();
    if (n == 0)
        return QStringLiteral("-");
    const stats::ProportionInterval interval = stats::wilsonInterval(results.diverged, n);
    return QStringLiteral("%1 of %2 [%3%, %4%]")
        .arg(results.diverged)
        .arg(n)
        .arg(interval.low * 100, 0, 'f', 0)
        .arg(interval.high * 100, 0, 'f', 0);
}

StatisticsTable statisticsTable(const std::vector<ConfigurationResults>& results)
{
    StatisticsTable table;
    table.header << QStringLiteral("metric: mean +/- sd [95% CI]");
    QStringList runs{QStringLiteral("runs (results of planned)")}, diverged{QStringLiteral("diverged [95% CI]")};
    for (const ConfigurationResults& r : results) {
        table.header << QString::fromStdString(r.configuration.label);
        runs << QStringLiteral("%1 of %2").arg(r.results()).arg(r.planned);
        diverged << divergenceText(r);
    }
    table.rows << runs << diverged;
    for (const SweepMetric& metric : sweepMetrics(sweepTaskMetric(results))) {
        QStringList row{metric.label};
        bool any = false;
        for (const ConfigurationResults& r : results) {
            const std::vector<double> values = metricValues(r, metric);
            any = any || !values.empty();
            row << meanSdText(values, metric.format.scale, metric.format.decimals, true);
        }
        if (any)
            table.rows << row;
    }
    return table;
}

QString verdictRule(const EquivalenceMargins& margins, TaskMetric metric)
{
    const stats::MetricFormat& test = finalTestMetric(metric).format;
    return QStringLiteral("A pair is equivalent when two one-sided tests (TOST) put the difference within +/-%1%2 "
                          "of %3 or +/-%4 of train loss, better or worse when a t-test finds a difference, else "
                          "inconclusive; both tests are paired seed by seed where the two configurations ran the "
                          "same seeds (Welch's otherwise); p-values are Holm-corrected over the pairs, at the 5% "
                          "level.")
        .arg(margins.testMetric(metric) * test.scale, 0, 'g', 3)
        .arg(test.unit.empty() ? QString() : QStringLiteral(" ") + QString::fromStdString(test.unit))
        .arg(QString::fromStdString(test.name))
        .arg(margins.trainLoss, 0, 'g', 3);
}

std::vector<PairVerdictRecord> pairVerdicts(const std::vector<ConfigurationResults>& results,
                                            const EquivalenceMargins& margins)
{
    const TaskMetric task = sweepTaskMetric(results);
    return pairVerdicts(results, std::vector<MetricMargin>{{&finalTestMetric(task), margins.testMetric(task)},
                                                           {&sweepMetric("final_train_loss"), margins.trainLoss}});
}

std::vector<PairVerdictRecord> pairVerdicts(const std::vector<ConfigurationResults>& results,
                                            const std::vector<MetricMargin>& metrics)
{
    std::vector<PairVerdictRecord> records;
    std::vector<std::pair<int, int>> pairs;
    for (std::size_t j = 1; j < results.size(); ++j)
        for (std::size_t i = 0; i < j; ++i)
            pairs.emplace_back(static_cast<int>(i), static_cast<int>(j));
    if (pairs.empty())
        return records;
    std::vector<std::vector<PairVerdictRecord>> perMetric;
    for (const auto& [metricPointer, margin] : metrics) {
        const SweepMetric& metric = *metricPointer;
        std::vector<stats::KeyedSample> values;
        for (const ConfigurationResults& r : results)
            values.push_back(keyedMetricValues(r, metric));
        // Holm's family: the pairs where both arms have the metric at all.
        std::vector<std::pair<int, int>> present;
        for (const auto& [i, j] : pairs)
            if (!values[static_cast<std::size_t>(i)].values.empty() &&
                !values[static_cast<std::size_t>(j)].values.empty())
                present.emplace_back(i, j);
        const std::vector<stats::PairVerdict> verdicts = stats::pairVerdicts(values, present, margin);
        std::vector<PairVerdictRecord> list;
        for (std::size_t k = 0; k < present.size(); ++k) {
            const auto i = static_cast<std::size_t>(present[k].first), j = static_cast<std::size_t>(present[k].second);
            const auto& test = verdicts[k].test;
            const bool paired = test && test->paired;
            list.push_back({i, j, &metric, margin, paired ? std::size_t(test->nA) : values[i].values.size(),
                            paired ? std::size_t(test->nB) : values[j].values.size(), verdicts[k]});
        }
        perMetric.push_back(std::move(list));
    }
    // Pair by pair, the metrics in their order.
    for (const auto& [i, j] : pairs)
        for (const auto& list : perMetric)
            for (const PairVerdictRecord& r : list)
                if (r.baseline == static_cast<std::size_t>(i) && r.other == static_cast<std::size_t>(j))
                    records.push_back(r);
    return records;
}

const char* verdictName(const PairVerdictRecord& record)
{
    switch (record.verdict.verdict) {
    case stats::Verdict::Equivalent: return "equivalent";
    case stats::Verdict::Different:
        return (record.verdict.test->difference > 0) == record.metric->format.higherIsBetter ? "better" : "worse";
    case stats::Verdict::Inconclusive: return "inconclusive";
    case stats::Verdict::CannotTest: return "undecidable";
    }
    return "undecidable";
}

QStringList pairSentences(const std::vector<ConfigurationResults>& results, const EquivalenceMargins& margins)
{
    QStringList sentences;
    const std::vector<PairVerdictRecord> records = pairVerdicts(results, margins);
    for (std::size_t j = 1; j < results.size(); ++j) {
        for (std::size_t i = 0; i < j; ++i) {
            const ConfigurationResults &baseline = results[i], &other = results[j];
            const std::string base = baseline.configuration.label, label = other.configuration.label;
            for (const PairVerdictRecord& r : records)
                if (r.baseline == i && r.other == j)
                    sentences << QString::fromStdString(stats::describeVerdict(
                        label, base, r.metric->format, r.verdict, r.margin, r.baselineCount, r.otherCount));
            if (baseline.diverged + other.diverged > 0)
                sentences << QString::fromStdString(stats::describeDivergence(
                    label, base, baseline.diverged, baseline.results(), other.diverged, other.results()));
        }
    }
    return sentences;
}

} // namespace mantissa::sweep
