// mantissa-cli sweep: a base config times axes times seeds, run here in parallel worker
// processes (resuming a sweep with the same spec: only the missing runs are trained) or as a
// Slurm job array; then the statistics over the seeds of each configuration.
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/interrupt.h"
#include "cli/slurm_sweep.h"
#include "cli/sweep_report.h"
#include "cli/sweep_runner.h"
#include "engine/util/check.h"
#include "storage/db_values.h"
#include "sweep/sweep_launch.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QThread>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unistd.h>

namespace mantissa::cli {

namespace {

constexpr const char* kCommand = "sweep";

nlohmann::json numberList(const QString& option, const QString& value, bool integers)
{
    nlohmann::json list = nlohmann::json::array();
    for (const QString& item : splitList(value)) {
        bool ok = false;
        if (integers)
            list.push_back(item.toLongLong(&ok));
        else
            list.push_back(item.toDouble(&ok));
        if (!ok)
            throw ConfigError("--" + option.toStdString() + " lists \"" + item.toStdString() + "\", not a number");
    }
    return list;
}

nlohmann::json stringList(const QString& value)
{
    nlohmann::json list = nlohmann::json::array();
    for (const QString& item : splitList(value))
        list.push_back(item.toStdString());
    return list;
}

// --seeds 8 (seeds 0 to 7) or --seeds 3,5,9.
nlohmann::json seedsValue(const QString& value)
{
    if (!value.contains(u',')) {
        bool ok = false;
        const qlonglong count = value.toLongLong(&ok);
        if (!ok)
            throw ConfigError("--seeds expects a count (8) or a list (0,1,2), got \"" + value.toStdString() + "\"");
        return count;
    }
    return numberList(QStringLiteral("seeds"), value, true);
}

bool isShorthand(const QCommandLineParser& parser)
{
    for (const char* option : {"preset", "precisions", "seeds", "learning-rates", "batch-sizes", "loss-scales"})
        if (parser.isSet(option))
            return true;
    return false;
}

// The spec as JSON: a spec file, or the shorthand options around a preset or config file;
// either way the overrides (--epochs, ...) go into "set".
SweepSpec sweepSpecFromOptions(const QCommandLineParser& parser)
{
    const QStringList positional = parser.positionalArguments();
    if (positional.size() > 1)
        throw ConfigError("give one SPEC.json (or CONFIG.json with --precisions/--seeds), not " +
                          std::to_string(positional.size()) + " files");
    nlohmann::json root = nlohmann::json::object();
    std::string origin = "the command line", baseDirectory;
    if (isShorthand(parser)) {
        if (parser.isSet("preset") == !positional.isEmpty())
            throw ConfigError("give either --preset NAME or CONFIG.json as the sweep's base");
        root["base"] = parser.isSet("preset")
                           ? nlohmann::json{{"preset", parser.value("preset").toStdString()}}
                           : nlohmann::json{{"file", QFileInfo(positional[0]).absoluteFilePath().toStdString()}};
        if (parser.isSet("precisions"))
            root["precisions"] = stringList(parser.value("precisions"));
        if (parser.isSet("loss-scales")) {
            nlohmann::json scales = nlohmann::json::array();
            for (const QString& item : splitList(parser.value("loss-scales"))) {
                bool number = false;
                const double value = item.toDouble(&number);
                scales.push_back(number ? nlohmann::json(value) : nlohmann::json(item.toStdString()));
            }
            root["loss_scales"] = scales;
        }
        if (parser.isSet("learning-rates"))
            root["learning_rates"] = numberList("learning-rates", parser.value("learning-rates"), false);
        if (parser.isSet("batch-sizes"))
            root["batch_sizes"] = numberList("batch-sizes", parser.value("batch-sizes"), true);
        if (parser.isSet("seeds"))
            root["seeds"] = seedsValue(parser.value("seeds"));
    } else {
        if (positional.isEmpty())
            throw ConfigError("no sweep given: use SPEC.json, or --preset NAME --precisions A,B --seeds N");
        const std::string path = positional[0].toStdString();
        std::ifstream in(path);
        if (!in)
            throw ConfigError(path + ": cannot open the sweep spec (does it exist and is it readable?)");
        std::stringstream text;
        text << in.rdbuf();
        try {
            root = nlohmann::json::parse(text.str());
        } catch (const nlohmann::json::parse_error& e) {
            throw ConfigError(path + ": not valid JSON: " + e.what());
        }
        origin = path;
        baseDirectory = QFileInfo(positional[0]).absolutePath().toStdString();
    }
    if (parser.isSet("name"))
        root["name"] = parser.value("name").toStdString();
    const std::pair<const char*, const char*> kOverrides[] = {
        {"epochs", "training.epochs"},       {"max-steps", "training.max_steps"}, {"device", "training.device"},
        {"limit-train", "data.limit_train"}, {"limit-test", "data.limit_test"},   {"data-dir", "data.directory"},
    };
    for (const auto& [option, key] : kOverrides) {
        if (!parser.isSet(option))
            continue;
        const QString value = parser.value(option);
        bool isNumber = false;
        const qlonglong number = value.toLongLong(&isNumber);
        if (root.is_object() && (!root.contains("set") || root["set"].is_object()))
            root["set"][key] = isNumber ? nlohmann::json(number) : nlohmann::json(value.toStdString());
    }
    return parseSweepSpec(root.dump(), origin, baseDirectory);
}

int runOnSlurm(const QCommandLineParser& parser, const SweepSpec& spec)
{
    const SlurmOptions options = slurmOptionsFrom(parser);
    const SlurmSweepSubmission submission = submitSweepToSlurm(options, spec, parser.isSet("dry-run"));
    nlohmann::json line = {{"runs", spec.runCount()},
                           {"submitted", submission.nothingToSubmit() ? 0 : submission.tasks.size()},
                           {"sweep_uid", submission.sweepUid.toStdString()}};
    if (submission.existing) {
        line["done"] = submission.existing->done.size();
        line["running"] = submission.existing->running.size();
    }
    if (!submission.nothingToSubmit()) {
        line["script"] = submission.script.toStdString();
        if (submission.existing)
            line["array"] = arrayRanges(submission.tasks).toStdString();
    }
    if (!submission.jobId.isEmpty()) {
        std::fprintf(stderr, "when it is done: %s\n", qPrintable(slurmImportHint(options)));
        line["job_id"] = submission.jobId.toStdString();
    }
    std::cout << line.dump() << std::endl;
    return kExitOk;
}

} // namespace

int runSweepCommand(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(
        "Run a sweep (a base config times axes times seeds) in parallel worker processes, or as a Slurm job\n"
        "array, and print statistics over the seeds of each configuration. Started again with the same spec,\n"
        "a sweep runs only its missing runs. Exit codes: 0 every run finished or diverged (a result), 1 a run\n"
        "failed or was interrupted, 2 bad input or an unusable database (or Slurm refused the job).");
    parser.addPositionalArgument("spec", "A sweep spec (docs/sweeps.md), or the base CONFIG.json of a shorthand.",
                                 "[SPEC.json|CONFIG.json]");
    addDatabaseOption(parser);
    addMarginOptions(parser);
    parser.addOptions({
        {"preset", "The base config: a built-in preset.", "name"},
        {"precisions", "Axis: comma-separated precision modes, the first is the baseline.", "list"},
        {"loss-scales", "Axis: loss scales (none, dynamic or a static value).", "list"},
        {"learning-rates", "Axis: learning rates.", "list"},
        {"batch-sizes", "Axis: batch sizes.", "list"},
        {"seeds", "Seeds per configuration: a count N (seeds 0 to N-1) or a list.", "n|list"},
        {"epochs", "Set training.epochs in every run.", "n"},
        {"max-steps", "Set training.max_steps in every run.", "n"},
        {"device", "Set training.device in every run.", "device"},
        {"data-dir", "Set data.directory in every run.", "dir"},
        {"limit-train", "Set data.limit_train in every run.", "n"},
        {"limit-test", "Set data.limit_test in every run.", "n"},
        {"name", "The sweep's name.", "name"},
        {"jobs", "Runs at once, each in its own process (default 1).", "n"},
        {"threads", "CPU threads per run (default: the cores divided by --jobs).", "n"},
        {"new", "Start a new sweep even if the database holds one with this spec."},
    });
    addSlurmOptions(parser, QStringLiteral("the sweep"));
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    try {
        const sweep::EquivalenceMargins margins = marginsFromOptions(parser);
        const SweepSpec spec = sweepSpecFromOptions(parser);
        SweepPlan checked = expandSweep(spec, "sweep"); // every run checked before anything is written
        if (parser.isSet("slurm"))
            return runOnSlurm(parser, spec);

        const auto store = openRunStore(parser);
        const sweep::LaunchedSweep launched = sweep::launchSweep(*store, spec, std::move(checked), parser.isSet("new"));
        const SweepPlan& plan = launched.plan;
        const std::vector<int>& missing = launched.missing;
        const sweep::Parallelism parallel = sweep::chooseParallelism(
            positiveOption(parser, "jobs", 1), parser.isSet("threads") ? positiveOption(parser, "threads", 1) : 0,
            int(missing.size()), QThread::idealThreadCount());
        const int jobs = parallel.jobs, threads = parallel.threads;
        std::fprintf(stderr,
                     "sweep %lld (%s): %zu runs, %zu configurations x %zu seeds; %s%zu to run, %d at once, "
                     "%d thread(s) each\n",
                     static_cast<long long>(launched.info.id), qPrintable(launched.info.name), plan.runs.size(),
                     plan.configurations.size(), spec.seeds.size(),
                     launched.resumed
                         ? qPrintable(QStringLiteral("resumed, %1 done; ").arg(plan.runs.size() - missing.size()))
                         : "",
                     missing.size(), jobs, threads);
        std::fflush(stderr);

        InterruptHandler interruptHandler;
        SweepRunnerOptions options;
        options.jobs = jobs;
        options.threads = threads;
        options.interactive = isatty(STDERR_FILENO) != 0;
        const SweepRunOutcome outcome = runSweepLocally(store->path(), launched.info.id, plan, missing, options);

        const auto results = sweep::collectResults(plan, store->sweepRuns(launched.info.id));
        std::fputs("\n", stdout);
        printSweepStatistics(stdout, results, margins);
        nlohmann::json line = sweepStatisticsJson(results, margins);
        line["sweep_id"] = launched.info.id;
        line["name"] = launched.info.name.toStdString();
        line["ran"] = {{"finished", outcome.finished},
                       {"diverged", outcome.diverged},
                       {"failed", outcome.failed},
                       {"interrupted", outcome.interrupted},
                       {"not_started", outcome.notStarted}};
        std::cout << line.dump() << std::endl;
        bool complete = true;
        for (const ConfigurationResults& r : results)
            complete = complete && r.finished + r.diverged == r.planned;
        return complete ? kExitOk : kExitRunFailed;
    } catch (const std::exception& error) {
        return reportError(kCommand, error);
    }
}

} // namespace mantissa::cli
