#include "cli/sweep_report.h"

#include "cli/run_format.h"
#include "cli/text_table.h"
#include "stats/comparison_text.h"
#include "stats/sample_statistics.h"

#include <QHash>

#include <cmath>
#include <functional>

namespace mantissa::cli {

namespace {

using storage::RunInfo;

bool isResult(const RunInfo& run) { return run.status == RunStatus::Finished || run.status == RunStatus::Diverged; }

// A final metric: its JSON key, how a sentence names it, and where a run keeps it.
struct Metric {
    const char* key;
    stats::MetricFormat format;
    std::function<std::optional<double>(const RunInfo&)> value;
};

const std::vector<Metric>& metrics()
{
    static const std::vector<Metric> list = {
        {"final_test_accuracy",
         {"test accuracy", 100, "points", 1},
         [](const RunInfo& r) { return r.summary.finalTestAccuracy; }},
        {"best_test_accuracy",
         {"best test accuracy", 100, "points", 1},
         [](const RunInfo& r) { return r.summary.bestTestAccuracy; }},
        {"final_train_loss", {"train loss", 1, "", 4}, [](const RunInfo& r) { return r.summary.finalTrainLoss; }},
        {"skipped_steps",
         {"skipped steps", 1, "", 1},
         [](const RunInfo& r) {
             return r.summary.skippedSteps ? std::optional<double>(double(*r.summary.skippedSteps)) : std::nullopt;
         }},
        {"final_loss_scale", {"final loss scale", 1, "", 0}, [](const RunInfo& r) { return r.summary.finalLossScale; }},
        {"samples_per_second",
         {"throughput", 1, "samples/s", 0},
         [](const RunInfo& r) { return r.summary.samplesPerSecond; }},
        {"wall_seconds", {"time", 1, "s", 1}, [](const RunInfo& r) { return r.wallSeconds; }},
    };
    return list;
}

// The metric over the runs that finished (a diverged run's numbers are those of a broken run;
// the divergence rate counts them).
std::vector<double> valuesOf(const ConfigurationResults& results, const Metric& metric)
{
    std::vector<double> values;
    for (const RunInfo& run : results.runs) {
        if (run.status != RunStatus::Finished)
            continue;
        if (const auto value = metric.value(run); value && std::isfinite(*value))
            values.push_back(*value);
    }
    return values;
}

// "78.1 +/- 4.2 [74.6, 81.6]": mean, sd and (withInterval) the 95% interval of the mean.
QString meanSd(const std::vector<double>& values, double scale, int decimals, bool withInterval)
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

QString divergenceCell(const ConfigurationResults& r)
{
    const int n = r.finished + r.diverged;
    if (n == 0)
        return QStringLiteral("-");
    const stats::ProportionInterval interval = stats::wilsonInterval(r.diverged, n);
    return QStringLiteral("%1 of %2 [%3%, %4%]")
        .arg(r.diverged)
        .arg(n)
        .arg(interval.low * 100, 0, 'f', 0)
        .arg(interval.high * 100, 0, 'f', 0);
}

const Metric& metric(const char* key)
{
    for (const Metric& m : metrics())
        if (std::string_view(m.key) == key)
            return m;
    std::abort();
}

} // namespace

std::vector<ConfigurationResults> collectResults(const SweepPlan& plan, const QList<RunInfo>& sweepRuns)
{
    // Per index: the latest attempt that is a result, else the latest attempt.
    QHash<int, RunInfo> chosen;
    for (const RunInfo& run : sweepRuns) { // oldest attempt first
        if (!run.sweepIndex)
            continue;
        const auto it = chosen.constFind(*run.sweepIndex);
        if (it == chosen.constEnd() || isResult(run) || !isResult(*it))
            chosen.insert(*run.sweepIndex, run);
    }
    std::vector<ConfigurationResults> results(plan.configurations.size());
    for (std::size_t c = 0; c < results.size(); ++c)
        results[c].configuration = plan.configurations[c];
    for (const SweepRun& run : plan.runs) {
        ConfigurationResults& r = results[std::size_t(run.configuration)];
        ++r.planned;
        const auto it = chosen.constFind(run.index);
        if (it == chosen.constEnd())
            continue;
        r.runs << *it;
        switch (it->status) {
        case RunStatus::Finished: ++r.finished; break;
        case RunStatus::Diverged: ++r.diverged; break;
        case RunStatus::Failed: ++r.failed; break;
        default: ++r.interrupted; break; // interrupted, stopped, or still running
        }
    }
    return results;
}

std::vector<int> missingRuns(const SweepPlan& plan, const QList<RunInfo>& sweepRuns)
{
    QSet<int> done;
    for (const RunInfo& run : sweepRuns)
        if (run.sweepIndex && isResult(run))
            done.insert(*run.sweepIndex);
    std::vector<int> missing;
    for (const SweepRun& run : plan.runs)
        if (!done.contains(run.index))
            missing.push_back(run.index);
    return missing;
}

void printSweepStatistics(std::FILE* out, const std::vector<ConfigurationResults>& results)
{
    using Align = TextTable::Align;
    TextTable table;
    table.addColumn(QStringLiteral("configuration"));
    table.addColumn(QStringLiteral("runs"), Align::Right);
    table.addColumn(QStringLiteral("diverged [95% CI]"), Align::Right);
    table.addColumn(QStringLiteral("test acc % (mean +/- sd [95% CI])"), Align::Right);
    table.addColumn(QStringLiteral("train loss"), Align::Right);
    table.addColumn(QStringLiteral("skipped"), Align::Right);
    table.addColumn(QStringLiteral("time"), Align::Right);
    table.addColumn(QStringLiteral("failed"), Align::Right);
    for (const ConfigurationResults& r : results) {
        const auto skipped = valuesOf(r, metric("skipped_steps"));
        const auto time = valuesOf(r, metric("wall_seconds"));
        table.addRow({QString::fromStdString(r.configuration.label),
                      QStringLiteral("%1/%2").arg(r.finished + r.diverged).arg(r.planned), divergenceCell(r),
                      meanSd(valuesOf(r, metric("final_test_accuracy")), 100, 1, true),
                      meanSd(valuesOf(r, metric("final_train_loss")), 1, 4, false),
                      skipped.empty() ? QStringLiteral("-") : QString::number(stats::summarize(skipped).mean, 'f', 1),
                      time.empty() ? QStringLiteral("-") : formatSeconds(stats::summarize(time).mean),
                      QString::number(r.failed + r.interrupted + r.missing())});
    }
    table.print(out);
    std::fputs("Metrics are over the runs that did not diverge; the divergence interval is Wilson's.\n", out);
    if (results.size() < 2)
        return;
    const ConfigurationResults& baseline = results.front();
    const std::string base = baseline.configuration.label;
    for (std::size_t c = 1; c < results.size(); ++c) {
        const ConfigurationResults& other = results[c];
        const std::string label = other.configuration.label;
        for (const char* key : {"final_test_accuracy", "final_train_loss"}) {
            const Metric& m = metric(key);
            std::fprintf(
                out, "%s\n",
                stats::describeDifference(label, base, m.format, valuesOf(baseline, m), valuesOf(other, m)).c_str());
        }
        if (baseline.diverged + other.diverged > 0)
            std::fprintf(out, "%s\n",
                         stats::describeDivergence(label, base, baseline.diverged,
                                                   baseline.finished + baseline.diverged, other.diverged,
                                                   other.finished + other.diverged)
                             .c_str());
    }
}

nlohmann::json sweepStatisticsJson(const std::vector<ConfigurationResults>& results)
{
    nlohmann::json list = nlohmann::json::array();
    for (const ConfigurationResults& r : results) {
        nlohmann::json item = {{"configuration", r.configuration.label},
                               {"assignments", r.configuration.assignments},
                               {"planned", r.planned},
                               {"finished", r.finished},
                               {"diverged", r.diverged},
                               {"failed", r.failed},
                               {"interrupted", r.interrupted},
                               {"missing", r.missing()}};
        const int n = r.finished + r.diverged;
        const stats::ProportionInterval rate = stats::wilsonInterval(r.diverged, n);
        item["divergence_rate"] = {{"k", r.diverged}, {"n", n}, {"low", rate.low}, {"high", rate.high}};
        nlohmann::json runIds = nlohmann::json::array();
        for (const RunInfo& run : r.runs)
            runIds.push_back(run.id);
        item["run_ids"] = runIds;
        for (const Metric& m : metrics()) {
            const std::vector<double> values = valuesOf(r, m);
            if (values.empty())
                continue;
            const stats::SampleSummary s = stats::summarize(values);
            nlohmann::json summary = {{"n", s.n}, {"mean", s.mean}};
            if (s.n >= 2) {
                summary["sd"] = s.sd;
                summary["ci95"] = {s.ciLow, s.ciHigh};
            }
            item["metrics"][m.key] = summary;
        }
        list.push_back(std::move(item));
    }
    nlohmann::json comparisons = nlohmann::json::array();
    for (std::size_t c = 1; c < results.size(); ++c) {
        const ConfigurationResults &baseline = results.front(), &other = results[c];
        for (const Metric& m : metrics()) {
            const auto test = stats::welchTest(valuesOf(baseline, m), valuesOf(other, m));
            if (!test)
                continue;
            comparisons.push_back({{"configuration", other.configuration.label},
                                   {"baseline", baseline.configuration.label},
                                   {"metric", m.key},
                                   {"difference", test->difference},
                                   {"ci95_half_width", test->halfWidth},
                                   {"t", test->t},
                                   {"df", test->df},
                                   {"p", test->p}});
        }
    }
    return {{"configurations", list}, {"comparisons", comparisons}};
}

} // namespace mantissa::cli
