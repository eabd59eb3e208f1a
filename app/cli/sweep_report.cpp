#include "cli/sweep_report.h"

#include "cli/run_format.h"
#include "cli/text_table.h"
#include "stats/sample_statistics.h"
#include "sweep/sweep_statistics.h"

namespace mantissa::cli {

using storage::RunInfo;
using sweep::metricValues;
using sweep::sweepMetric;

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
        const auto skipped = metricValues(r, sweepMetric("skipped_steps"));
        const auto time = metricValues(r, sweepMetric("wall_seconds"));
        table.addRow({QString::fromStdString(r.configuration.label),
                      QStringLiteral("%1/%2").arg(r.results()).arg(r.planned), sweep::divergenceText(r),
                      sweep::meanSdText(metricValues(r, sweepMetric("final_test_accuracy")), 100, 1, true),
                      sweep::meanSdText(metricValues(r, sweepMetric("final_train_loss")), 1, 4, false),
                      skipped.empty() ? QStringLiteral("-") : QString::number(stats::summarize(skipped).mean, 'f', 1),
                      time.empty() ? QStringLiteral("-") : formatSeconds(stats::summarize(time).mean),
                      QString::number(r.failed + r.interrupted + r.missing())});
    }
    table.print(out);
    std::fputs("Metrics are over the runs that did not diverge; the divergence interval is Wilson's.\n", out);
    if (results.size() > 1)
        std::fprintf(out, "%s\n", qPrintable(sweep::verdictRule()));
    for (const QString& sentence : sweep::pairSentences(results))
        std::fprintf(out, "%s\n", qPrintable(sentence));
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
        const stats::ProportionInterval rate = stats::wilsonInterval(r.diverged, r.results());
        item["divergence_rate"] = {{"k", r.diverged}, {"n", r.results()}, {"low", rate.low}, {"high", rate.high}};
        nlohmann::json runIds = nlohmann::json::array();
        for (const RunInfo& run : r.runs)
            runIds.push_back(run.id);
        item["run_ids"] = runIds;
        for (const sweep::SweepMetric& m : sweep::sweepMetrics()) {
            const std::vector<double> values = metricValues(r, m);
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
        for (const sweep::SweepMetric& m : sweep::sweepMetrics()) {
            const auto test = stats::welchTest(metricValues(baseline, m), metricValues(other, m));
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
