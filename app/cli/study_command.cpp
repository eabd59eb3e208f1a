// mantissa-cli study: a paper's claim rerun as a study (sweep/study_spec.h): its trained arms
// as a sweep run here in worker processes (resumed: only the missing runs are trained), then
// its fork arms from their parents' saved states, then its report with the verdict line the
// statistics give. On Slurm both kinds of arm run as job arrays, the forks' after the trained
// arms' (study_slurm.h); `import` and `study --no-run` then report.
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/interrupt.h"
#include "cli/study_forks.h"
#include "cli/study_slurm.h"
#include "cli/sweep_runner.h"
#include "engine/util/check.h"
#include "storage/run_store.h"
#include "sweep/study_files.h"
#include "sweep/study_results.h"
#include "sweep/sweep_launch.h"

#include <QFile>
#include <QFileInfo>
#include <QThread>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <unistd.h>

namespace mantissa::cli {

namespace {

constexpr const char* kCommand = "study";

int listStudies()
{
    const QStringList files = sweep::studyFiles();
    if (files.isEmpty()) {
        std::fputs("no studies found (set MANTISSA_STUDIES_DIR to a folder of study specs)\n", stderr);
        return kExitOk;
    }
    std::printf("studies in %s:\n", qPrintable(sweep::studiesDirectory()));
    for (const QString& file : files) {
        try {
            const sweep::StudySpec spec = sweep::loadStudySpecFile(file.toStdString(), false);
            std::printf("  %-28s %zu arms x %zu seeds  %s\n", spec.name.c_str(), spec.armOrder.size(),
                        spec.sweep.seeds.size(), spec.title.c_str());
        } catch (const std::exception& error) {
            std::printf("  %-28s (cannot be read: %s)\n", qPrintable(QFileInfo(file).completeBaseName()), error.what());
        }
    }
    return kExitOk;
}

// The trained arms on Slurm as `sweep --slurm` submits a sweep, then the fork arms as a second
// job array that starts when the first has ended (study_slurm.h). Started again on the same
// --out, both submit only what has no result.
int runOnSlurm(const QCommandLineParser& parser, const sweep::StudySpec& spec)
{
    const SlurmOptions options = slurmOptionsFrom(parser);
    const bool dryRun = parser.isSet("dry-run");
    const SlurmSweepSubmission trained = submitSweepToSlurm(options, spec.sweep, dryRun);
    nlohmann::json line = {{"runs", spec.sweep.runCount()},
                           {"submitted", trained.nothingToSubmit() ? 0 : trained.tasks.size()},
                           {"sweep_uid", trained.sweepUid.toStdString()}};
    if (!trained.nothingToSubmit())
        line["script"] = trained.script.toStdString();
    if (!trained.jobId.isEmpty())
        line["job_id"] = trained.jobId.toStdString();
    if (!spec.forks.empty()) {
        const StudyForkSubmission forks = submitStudyForksToSlurm(options, spec, trained, dryRun);
        line["forks"] = forks.planned;
        line["forks_done"] = forks.done;
        line["forks_submitted"] = forks.tasks.size();
        line["forks_waiting"] = forks.waiting;
        if (!forks.script.isEmpty())
            line["fork_script"] = forks.script.toStdString();
        if (!forks.jobId.isEmpty())
            line["fork_job_id"] = forks.jobId.toStdString();
    }
    std::fprintf(stderr, "when the jobs are done: %s, then mantissa-cli study %s --no-run for the report\n",
                 qPrintable(slurmImportHint(options)), spec.name.c_str());
    std::cout << line.dump() << std::endl;
    return kExitOk;
}

void writeReport(const QString& path, const QString& markdown)
{
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate) || file.write(markdown.toUtf8()) < 0)
        throw ConfigError("--report " + path.toStdString() + ": cannot write the report");
}

} // namespace

int runStudyCommand(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(
        "Run a study: a paper's claim rerun as arms x seeds (studies/, docs/studies.md). The trained arms run as\n"
        "a sweep (in parallel worker processes), then the fork arms continue their parents' runs from the fork\n"
        "step (with --slurm: both as Slurm job arrays, the forks' after the trained arms'); then the report (Markdown "
        "on stdout): the claim, the setup, each arm's mean and 95%\n"
        "interval, the verdicts between arms and whether the claim reproduces. Started again, a study runs only\n"
        "its missing runs. Exit codes: 0 every planned run has a result, 1 some run has none, 2 bad input (an\n"
        "unknown study, a bad spec, an arm that cannot run) or an unusable database.");
    parser.addPositionalArgument("study", "A study's name (studies/NAME.json) or its file.", "NAME|FILE");
    addDatabaseOption(parser);
    parser.addOptions({
        {"list", "List the studies and exit."},
        {"full", "Use the study's \"full\" setting (more steps or seeds)."},
        {"no-run", "Run nothing: write the report of what the database holds."},
        {"report", "Also write the report to this file.", "file"},
        {"jobs", "Runs at once, each in its own process (default 1).", "n"},
        {"threads", "CPU threads per run (default: the cores divided by --jobs).", "n"},
    });
    addSlurmOptions(parser, QStringLiteral("the study (its trained arms, then its fork arms as a second array)"));
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    if (parser.isSet("list"))
        return listStudies();
    if (const auto exit = requirePositionals(parser, 1, kCommand, "NAME|FILE"))
        return *exit;
    try {
        const QString file = sweep::resolveStudyFile(parser.positionalArguments().first());
        const sweep::StudySpec spec = sweep::loadStudySpecFile(file.toStdString(), parser.isSet("full"));
        if (const std::vector<std::string> problems = sweep::armsThatCannotRun(spec); !problems.empty()) {
            std::fprintf(stderr, "mantissa-cli %s: %s: %zu arm(s) cannot run; nothing was run:\n", kCommand,
                         qPrintable(file), problems.size());
            for (const std::string& problem : problems)
                std::fprintf(stderr, "  %s\n", problem.c_str());
            return kExitBadInput;
        }
        if (parser.isSet("slurm"))
            return runOnSlurm(parser, spec);

        const auto store = openRunStore(parser);
        if (!parser.isSet("no-run")) {
            const sweep::LaunchedSweep launched =
                sweep::launchSweep(*store, spec.sweep, expandSweep(spec.sweep, spec.file), false);
            const std::vector<sweep::ForkTask> before = sweep::studyForkTasks(*store, spec, launched.info);
            const auto forksToDo = std::count_if(before.begin(), before.end(), [](const sweep::ForkTask& t) {
                return !t.done() && !(t.parent && t.parent->status == RunStatus::Diverged);
            });
            const int wanted = positiveOption(parser, "jobs", 1);
            const int threadsAsked = parser.isSet("threads") ? positiveOption(parser, "threads", 1) : 0;
            const sweep::Parallelism parallel =
                sweep::chooseParallelism(wanted, threadsAsked, int(std::max<std::size_t>(launched.missing.size(), 1)),
                                         QThread::idealThreadCount());
            std::fprintf(stderr,
                         "study %s (spec %s): %zu arms x %zu seeds; sweep %lld%s: %zu of %zu runs to train, %lld "
                         "fork(s) to run; %d at once, %d thread(s) each\n",
                         spec.name.c_str(), spec.hash.c_str(), spec.armOrder.size(), spec.sweep.seeds.size(),
                         static_cast<long long>(launched.info.id), launched.resumed ? " (resumed)" : "",
                         launched.missing.size(), launched.plan.runs.size(), static_cast<long long>(forksToDo),
                         parallel.jobs, parallel.threads);
            std::fflush(stderr);
            InterruptHandler interruptHandler;
            SweepRunnerOptions options;
            options.jobs = parallel.jobs;
            options.threads = parallel.threads;
            options.interactive = isatty(STDERR_FILENO) != 0;
            runSweepLocally(store->path(), launched.info.id, launched.plan, launched.missing, options);
            if (!InterruptHandler::interrupted() && forksToDo > 0) {
                const std::vector<sweep::ForkTask> tasks = sweep::studyForkTasks(*store, spec, launched.info);
                const sweep::Parallelism forkParallel =
                    sweep::chooseParallelism(wanted, threadsAsked, int(tasks.size()), QThread::idealThreadCount());
                runStudyForks(*store, spec, tasks, forkParallel.jobs, forkParallel.threads);
            }
        }
        const sweep::StudyResults results = sweep::collectStudyResults(*store, spec);
        const QString markdown = sweep::studyReportMarkdown(results);
        std::cout << markdown.toStdString() << std::flush;
        if (parser.isSet("report"))
            writeReport(parser.value("report"), markdown);
        std::fprintf(stderr, "%s: %s\n", spec.name.c_str(), qPrintable(results.verdict.line));
        return results.verdict.outcome == QLatin1String("no verdict yet") ? kExitRunFailed : kExitOk;
    } catch (const std::exception& error) {
        return reportError(kCommand, error);
    }
}

} // namespace mantissa::cli
