// mantissa-cli: headless training and run management.
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/report_command.h"
#include "engine/backend/cpu/openmp_wait_policy.h"

#include <QCoreApplication>

#include <cstdio>
#include <cstring>

namespace {

using CommandFunction = int (*)(const QStringList&);

struct Command {
    const char* name;
    CommandFunction run;
    const char* arguments;
    const char* summary;
};

constexpr Command kCommands[] = {
    {"train", mantissa::cli::runTrainCommand, "(--preset NAME | CONFIG.json) [options]",
     "train a model and record the run"},
    {"compare", mantissa::cli::runCompareCommand,
     "(--preset NAME | CONFIG.json) --precisions fp32,mixed-fp16 [options]",
     "train once per precision in a comparison group; results table"},
    {"runs", mantissa::cli::runRunsCommand,
     "[--status S] [--preset P] [--precision M] [--group G] [--tag T] [--limit N]", "list the runs, newest first"},
    {"show", mantissa::cli::runShowCommand, "RUN [--config]", "config, summary, epochs and events of a run"},
    {"export", mantissa::cli::runExportCommand, "RUN --format csv|json [-o FILE]",
     "a run's per-step and per-epoch rows"},
    {"delete", mantissa::cli::runDeleteCommand, "RUN", "delete a run and its checkpoints"},
    {"note", mantissa::cli::runNoteCommand, "RUN TEXT [--append]", "set a run's notes"},
    {"tag", mantissa::cli::runTagCommand, "RUN TAG... [--remove]", "tag a run (or untag it)"},
    {"numerics", mantissa::cli::runNumericsCommand, "RUN [--layer NAME] [--step N] [--percentile P]",
     "per-layer amax, zeros, underflow, subnormals, overflow and suggested loss scale at a sampled step"},
    {"replay", mantissa::cli::runReplayCommand, "RUN",
     "skipped steps and scales other loss-scale policies would have had on this run"},
    {"sweep", mantissa::cli::runSweepCommand,
     "(SPEC.json | --preset P --precisions A,B --seeds N) [--jobs N] [--slurm --out DIR]",
     "runs of a config times axes times seeds, in parallel or on Slurm; statistics over seeds"},
    {"import", mantissa::cli::runImportCommand, "DIR|FILE...",
     "merge other run databases (a Slurm sweep's --out) into this one"},
    {"formats", mantissa::cli::runFormatsCommand, "[--json]",
     "the FP8, FP6, FP4 and E8M0 formats: bits, bias, range, specials; the scaled formats"},
    {"quantize", mantissa::cli::runQuantizeCommand,
     "--format F [--rounding rne|stochastic] [--saturate] [--block N --scale-rule R] (VALUES... | --input FILE)",
     "code, decoded value, scale and error per value in a sub-16-bit format (mxfp8, nvfp4, ...)"},
};

// `report` is dispatched before the QCoreApplication exists: it needs a QApplication to draw plots.
constexpr const char* kReportUsage = "  report   RUN [RUN...] -o FILE.pdf|.html|.md|.csv [--baseline RUN]\n"
                                     "           a report of one run or a comparison (report --help)\n";

void printUsage(std::FILE* out)
{
    std::fputs("usage: mantissa-cli COMMAND [options]   (mantissa-cli COMMAND --help for its options)\n\ncommands:\n",
               out);
    for (const Command& command : kCommands)
        std::fprintf(out, "  %-8s %s\n           %s\n", command.name, command.arguments, command.summary);
    std::fputs(kReportUsage, out);
    std::fputs("\nRUN is a run's id or name. Every command takes --db FILE; without it MANTISSA_DB, else\n"
               "~/.local/share/Mantissa/mantissa/runs.sqlite. Exit codes: 0 done, 1 a run diverged or\n"
               "failed (compare: failed), 2 bad input, unknown run or unusable database.\n",
               out);
}

} // namespace

int main(int argc, char** argv)
{
    mantissa::cpu::adoptPassiveOpenMpWaitPolicy(argv);   // sweep workers and other programs share the cores
    if (argc > 1 && std::strcmp(argv[1], "report") == 0) // needs a QApplication, not a QCoreApplication
        return mantissa::cli::runReportCommand(argc, argv);
    QCoreApplication app(argc, argv);
    QCoreApplication::setOrganizationName("Mantissa");
    QCoreApplication::setApplicationName("mantissa");
    QCoreApplication::setApplicationVersion(MANTISSA_VERSION);
    QStringList arguments = QCoreApplication::arguments();
    if (arguments.size() < 2 || arguments[1] == "--help" || arguments[1] == "-h") {
        printUsage(arguments.size() < 2 ? stderr : stdout);
        return arguments.size() < 2 ? mantissa::cli::kExitBadInput : mantissa::cli::kExitOk;
    }
    if (arguments[1] == "--version") {
        std::printf("mantissa-cli %s\n", MANTISSA_VERSION);
        return mantissa::cli::kExitOk;
    }
    const QString name = arguments.takeAt(1);
    if (name == QLatin1String("sweep-worker")) // started by `sweep` and by Slurm tasks, not by people
        return mantissa::cli::runSweepWorkerCommand(arguments);
    for (const Command& command : kCommands) {
        if (name == QLatin1String(command.name))
            return command.run(arguments);
    }
    std::fprintf(stderr, "mantissa-cli: unknown command \"%s\"\n\n", qPrintable(name));
    printUsage(stderr);
    return mantissa::cli::kExitBadInput;
}
