#include "cli/sweep_report.h"

#include "cli/run_format.h"
#include "cli/text_table.h"
#include "engine/util/check.h"
#include "stats/sample_statistics.h"
#include "sweep/sweep_statistics.h"

#include <cmath>

namespace mantissa::cli {

using storage::RunInfo;
using sweep::metricValues;
using sweep::sweepMetric;

void addMarginOptions(QCommandLineParser& parser)
{
    const sweep::EquivalenceMargins defaults;
    parser.addOptions({
        {"margin-accuracy",
         QStringLiteral("Pairs within +/-POINTS of test accuracy are equivalent (default %1).")
             .arg(defaults.testAccuracy * 100),
         "points"},
        {"margin-rmse",
         QStringLiteral("Regression: pairs within +/-R of test RMSE, in the targets' unit, are equivalent "
                        "(default %1).")
             .arg(defaults.testRmse),
         "R"},
        {"margin-bpc",
         QStringLiteral("Language models: pairs within +/-B bits per character are equivalent (default %1).")
             .arg(defaults.testBitsPerCharacter),
         "B"},
        {"margin-loss",
         QStringLiteral("Pairs within +/-L of train loss are equivalent (default %1).").arg(defaults.trainLoss), "L"},
    });
}

namespace {

double marginOption(const QCommandLineParser& parser, const char* name, double fallback, double scale)
{
    if (!parser.isSet(name))
        return fallback;
    bool ok = false;
    const double value = parser.value(name).toDouble(&ok);
    if (!ok || !std::isfinite(value) || value <= 0)
        throw ConfigError(std::string("--") + name + " expects a positive number, got \"" +
                          parser.value(name).toStdString() + "\"");
    return value / scale;
}

} // namespace

sweep::EquivalenceMargins marginsFromOptions(const QCommandLineParser& parser)
{
    sweep::EquivalenceMargins margins;
    margins.testAccuracy = marginOption(parser, "margin-accuracy", margins.testAccuracy, 100);
    margins.testRmse = marginOption(parser, "margin-rmse", margins.testRmse, 1);
    margins.testBitsPerCharacter = marginOption(parser, "margin-bpc", margins.testBitsPerCharacter, 1);
    margins.trainLoss = marginOption(parser, "margin-loss", margins.trainLoss, 1);
    return margins;
}

void printSweepStatistics(std::FILE* out, const std::vector<ConfigurationResults>& results,
                          const sweep::EquivalenceMargins& margins)
{
    using Align = TextTable::Align;
    const TaskMetric task = sweep::sweepTaskMetric(results);
    const sweep::SweepMetric& test = sweep::finalTestMetric(task);
    TextTable table;
    table.addColumn(QStringLiteral("configuration"));
    table.addColumn(QStringLiteral("runs"), Align::Right);
    table.addColumn(QStringLiteral("diverged [95% CI]"), Align::Right);
    const QString testColumn = task == TaskMetric::Accuracy ? QStringLiteral("test acc %")
                               : task == TaskMetric::Rmse   ? QStringLiteral("test RMSE")
                                                            : QStringLiteral("test bits/char");
    table.addColumn(testColumn + QStringLiteral(" (mean +/- sd [95% CI])"), Align::Right);
    table.addColumn(QStringLiteral("train loss"), Align::Right);
    table.addColumn(QStringLiteral("skipped"), Align::Right);
    table.addColumn(QStringLiteral("time"), Align::Right);
    table.addColumn(QStringLiteral("failed"), Align::Right);
    for (const ConfigurationResults& r : results) {
        const auto skipped = metricValues(r, sweepMetric("skipped_steps"));
        const auto time = metricValues(r, sweepMetric("wall_seconds"));
        table.addRow({QString::fromStdString(r.configuration.label),
                      QStringLiteral("%1/%2").arg(r.results()).arg(r.planned), sweep::divergenceText(r),
                      sweep::meanSdText(metricValues(r, test), test.format.scale, test.format.decimals, true),
                      sweep::meanSdText(metricValues(r, sweepMetric("final_train_loss")), 1, 4, false),
                      skipped.empty() ? QStringLiteral("-") : QString::number(stats::summarize(skipped).mean, 'f', 1),
                      time.empty() ? QStringLiteral("-") : formatSeconds(stats::summarize(time).mean),
                      QString::number(r.failed + r.interrupted + r.missing())});
    }
    table.print(out);
    std::fputs("Metrics are over the runs that did not diverge; the divergence interval is Wilson's.\n", out);
    if (results.size() > 1)
        std::fprintf(out, "%s\n", qPrintable(sweep::verdictRule(margins, task)));
    for (const QString& sentence : sweep::pairSentences(results, margins))
        std::fprintf(out, "%s\n", qPrintable(sentence));
}

nlohmann::json sweepStatisticsJson(const std::vector<ConfigurationResults>& results,
                                   const sweep::EquivalenceMargins& margins)
{
    const TaskMetric task = sweep::sweepTaskMetric(results);
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
        for (const sweep::SweepMetric& m : sweep::sweepMetrics(task)) {
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
        for (const sweep::SweepMetric& m : sweep::sweepMetrics(task)) {
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
    nlohmann::json verdicts = nlohmann::json::array();
    for (const sweep::PairVerdictRecord& r : sweep::pairVerdicts(results, margins)) {
        nlohmann::json item = {{"configuration", results[r.other].configuration.label},
                               {"baseline", results[r.baseline].configuration.label},
                               {"metric", r.metric->key},
                               {"margin", r.margin},
                               {"verdict", sweep::verdictName(r)}};
        if (const auto& t = r.verdict.test) {
            item["difference"] = t->difference;
            item["paired"] = t->paired; // seed by seed
            item["n"] = {t->nA, t->nB};
            item["ci95"] = {t->differenceLow, t->differenceHigh};
            item["ci90"] = {t->equivalenceLow, t->equivalenceHigh};
            item["p_equivalent_holm"] = r.verdict.pEquivalentAdjusted;
            item["p_different_holm"] = r.verdict.pDifferentAdjusted;
        }
        if (r.verdict.verdict == stats::Verdict::Inconclusive)
            item["seeds_per_arm_to_decide"] = r.verdict.seedsToDecide;
        verdicts.push_back(std::move(item));
    }
    return {{"metric", taskMetricName(task)},
            {"configurations", list},
            {"comparisons", comparisons},
            {"verdicts", verdicts}};
}

} // namespace mantissa::cli
