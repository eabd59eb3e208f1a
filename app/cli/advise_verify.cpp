#include "cli/advise_verify.h"

#include "cli/command_line.h"
#include "cli/exit_codes.h"
#include "cli/sweep_report.h"
#include "cli/sweep_runner.h"
#include "engine/advisor/rules_of_thumb.h"
#include "engine/util/check.h"
#include "engine/util/enum_table.h"
#include "sweep/sweep_launch.h"

#include <QFileInfo>
#include <QThread>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <unistd.h>

namespace mantissa::cli {

namespace {

// model.precision_overrides as the config writer writes it ({} when there are none).
nlohmann::json overridesJson(const RunConfig& config)
{
    const nlohmann::json model = nlohmann::json::parse(runConfigToJson(config, -1)).at("model");
    return model.contains("precision_overrides") ? model.at("precision_overrides") : nlohmann::json::object();
}

struct Candidate {
    std::string name;
    RunConfig config;
    double flopShare = 0;
};

double flopShare(const AdviceTable& table, const std::vector<std::string>& low)
{
    double all = 0, part = 0;
    for (const AdvisorLayer& layer : table.layers) {
        all += static_cast<double>(layer.flops);
        if (std::find(low.begin(), low.end(), layer.name) != low.end())
            part += static_cast<double>(layer.flops);
    }
    return all > 0 ? part / all : 0;
}

} // namespace

AdviceVerification verifyAdvice(const QCommandLineParser& parser, const RunConfig& baseline, const RunConfig& advised,
                                const AdviceTable& table, int seeds, const std::string& output)
{
    const LayerPrecision format = table.formats.front();
    std::vector<bool> fits;
    for (std::size_t l = 0; l < table.layers.size(); ++l)
        fits.push_back(table.misfits[l][0].empty());
    std::vector<std::string> advisedLow;
    for (std::size_t l = 0; l < table.layers.size(); ++l)
        if (!chosenFormat(table, l).empty())
            advisedLow.push_back(table.layers[l].name);

    std::vector<Candidate> candidates{{"baseline", baseline, 0.0}, {"advised", advised, flopShare(table, advisedLow)}};
    for (const RuleOfThumb& rule : rulesOfThumb(table.layers, fits, layersKeptFirstAndLast(baseline.model))) {
        RunConfig config = baseline;
        for (const std::string& layer : rule.low)
            config.model.precisionOverrides[layer] = LayerFormat(format);
        candidates.push_back(
            {rule.name + " (" + std::string(enumKey(format)) + ")", config, flopShare(table, rule.low)});
    }

    // One configuration per distinct set of formats (a sweep's axis lists a value once): a rule
    // that gives what the advice gives is named with it.
    std::vector<Candidate> distinct;
    nlohmann::json values = nlohmann::json::array();
    for (const Candidate& c : candidates) {
        const nlohmann::json overrides = overridesJson(c.config);
        const auto same = std::find(values.begin(), values.end(), overrides);
        if (same != values.end()) {
            distinct[static_cast<std::size_t>(same - values.begin())].name += " = " + c.name;
            continue;
        }
        values.push_back(overrides);
        distinct.push_back(c);
    }
    candidates = distinct;
    std::fprintf(stdout, "\nverification over %d seeds:\n", seeds);
    for (std::size_t i = 0; i < candidates.size(); ++i)
        std::fprintf(stdout, "  %-28s %5.1f%% of FLOPs low  model.precision_overrides=%s\n", candidates[i].name.c_str(),
                     100.0 * candidates[i].flopShare, values[i].dump().c_str());
    const nlohmann::json spec = {
        {"name", "advise " + baseline.name},
        {"base", {{"config", nlohmann::json::parse(runConfigToJson(baseline, -1))}}},
        {"axes", nlohmann::json::array({{{"key", "model.precision_overrides"}, {"values", values}}})},
        {"seeds", seeds}};
    const std::string stem = output.ends_with(".json") ? output.substr(0, output.size() - 5) : output;
    const std::string specPath = stem + ".verify.json";
    {
        std::ofstream out(specPath, std::ios::trunc);
        out << spec.dump(2) << '\n';
        if (!out.flush())
            throw IoError("cannot write " + specPath);
    }
    std::fprintf(stdout, "sweep spec: %s (mantissa-cli sweep %s runs it again)\n\n", specPath.c_str(),
                 specPath.c_str());
    std::fflush(stdout);

    // `sweep`'s own path (sweep_command.cpp), with the configurations named rather than
    // labelled by their overrides' JSON.
    const SweepSpec parsed =
        parseSweepSpec(spec.dump(), specPath, QFileInfo(QString::fromStdString(specPath)).absolutePath().toStdString());
    SweepPlan plan = expandSweep(parsed, specPath);
    for (SweepConfiguration& c : plan.configurations)
        c.label = candidates.at(static_cast<std::size_t>(c.index)).name;
    for (SweepRun& run : plan.runs)
        run.label =
            candidates.at(static_cast<std::size_t>(run.configuration)).name + ", seed=" + std::to_string(run.seed);
    const auto store = openRunStore(parser);
    const sweep::LaunchedSweep launched = sweep::launchSweep(*store, parsed, std::move(plan), false);
    const sweep::Parallelism parallel =
        sweep::chooseParallelism(1, 0, int(launched.missing.size()), QThread::idealThreadCount());
    std::fprintf(
        stderr, "sweep %lld (%s): %zu runs, %s%zu to run\n", static_cast<long long>(launched.info.id),
        qPrintable(launched.info.name), launched.plan.runs.size(),
        launched.resumed
            ? qPrintable(QStringLiteral("resumed, %1 done; ").arg(launched.plan.runs.size() - launched.missing.size()))
            : "",
        launched.missing.size());
    SweepRunnerOptions options;
    options.jobs = parallel.jobs;
    options.threads = parallel.threads;
    options.interactive = isatty(STDERR_FILENO) != 0;
    const SweepRunOutcome outcome =
        runSweepLocally(store->path(), launched.info.id, launched.plan, launched.missing, options);
    std::vector<ConfigurationResults> results =
        sweep::collectResults(launched.plan, store->sweepRuns(launched.info.id));
    std::fputs("\n", stdout);
    const sweep::EquivalenceMargins margins = marginsFromOptions(parser);
    printSweepStatistics(stdout, results, margins);
    nlohmann::json line = adviceJson(table);
    line["config"] = output;
    line["verification"] = sweepStatisticsJson(results, margins);
    line["verification"]["sweep_id"] = launched.info.id;
    line["verification"]["not_started"] = outcome.notStarted;
    std::cout << line.dump() << std::endl;
    AdviceVerification verification;
    verification.sweepId = launched.info.id;
    for (const Candidate& c : candidates)
        verification.candidates << report::AdviceCandidate{QString::fromStdString(c.name), c.flopShare};
    bool complete = true;
    for (const ConfigurationResults& r : results)
        complete = complete && r.finished + r.diverged == r.planned;
    verification.exitCode = complete ? kExitOk : kExitRunFailed;
    return verification;
}

} // namespace mantissa::cli
