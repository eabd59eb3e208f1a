// mantissa-cli import DIR|FILE...: merges other run databases (the per-task files a Slurm
// sweep leaves under DIR/runs) into the run database. Importing twice adds nothing; the
// runs of one sweep meet in one sweep again. A file that is not a Mantissa run database
// (foreign, corrupt, empty) is skipped by name and the others are still imported.
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/sweep_report.h"
#include "storage/storage_error.h"
#include "sweep/sweep_import.h"

#include <cstdio>
#include <iostream>

namespace mantissa::cli {

namespace {

constexpr const char* kCommand = "import";

} // namespace

int runImportCommand(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(
        "Import the runs of other run databases (a directory is searched for *.sqlite and *.db files),\n"
        "keeping their sweeps; a run already here is not imported twice. Then the statistics of every\n"
        "sweep that received runs. Exit codes: 0 every file imported, 1 a file was skipped, 2 bad input.");
    parser.addPositionalArgument("source", "A directory (such as a Slurm sweep's --out) or database files.",
                                 "DIR|FILE...");
    addDatabaseOption(parser);
    addMarginOptions(parser);
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    if (parser.positionalArguments().isEmpty())
        return fail(kCommand, QStringLiteral("give a directory or database files to import"), kExitBadInput);
    try {
        const sweep::EquivalenceMargins margins = marginsFromOptions(parser);
        const auto store = openRunStore(parser);
        const sweep::ImportSummary summary = sweep::importDatabases(*store, parser.positionalArguments());
        for (const sweep::FileImport& file : summary.files) {
            if (!file.skipped.isEmpty()) {
                std::fprintf(stderr, "skipped %s\n", qPrintable(file.skipped));
                continue;
            }
            std::fprintf(
                stderr, "%s: %d imported, %d already here%s\n", qPrintable(file.file), file.result.imported,
                file.result.alreadyPresent,
                file.result.stillRunning > 0
                    ? qPrintable(
                          QStringLiteral(", %1 still running (import again later)").arg(file.result.stillRunning))
                    : "");
        }
        std::fprintf(stderr, "%s\n", qPrintable(summary.text()));
        const storage::ImportResult& total = summary.total;
        const int skipped = summary.skippedFiles;
        nlohmann::json sweeps = nlohmann::json::array();
        for (const storage::SweepInfo& info : store->sweeps()) {
            const QList<storage::RunInfo> runs = store->sweepRuns(info.id);
            if (runs.isEmpty())
                continue;
            const auto results = sweep::loadStoredSweep(*store, info.id).results;
            std::printf("\nsweep %lld (%s): %lld of %d runs\n", static_cast<long long>(info.id), qPrintable(info.name),
                        static_cast<long long>(runs.size()), info.runCount);
            printSweepStatistics(stdout, results, margins);
            nlohmann::json item = sweepStatisticsJson(results, margins);
            item["sweep_id"] = info.id;
            item["name"] = info.name.toStdString();
            sweeps.push_back(std::move(item));
        }
        std::cout << nlohmann::json{{"imported", total.imported},
                                    {"already_present", total.alreadyPresent},
                                    {"still_running", total.stillRunning},
                                    {"skipped_files", skipped},
                                    {"sweeps", sweeps}}
                         .dump()
                  << std::endl;
        return skipped > 0 ? kExitRunFailed : kExitOk;
    } catch (const std::exception& error) {
        return reportError(kCommand, error);
    }
}

} // namespace mantissa::cli
