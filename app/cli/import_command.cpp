// mantissa-cli import DIR|FILE...: merges other run databases (the per-task files a Slurm
// sweep leaves under DIR/runs) into the run database. Importing twice adds nothing; the
// runs of one sweep meet in one sweep again. A file that is not a Mantissa run database
// (foreign, corrupt, empty) is skipped by name and the others are still imported.
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/sweep_report.h"
#include "storage/storage_error.h"

#include <QDirIterator>
#include <QFileInfo>

#include <algorithm>
#include <cstdio>
#include <iostream>

namespace mantissa::cli {

namespace {

constexpr const char* kCommand = "import";

// Database files under a directory (recursively; logs, scripts and checkpoints are not).
QStringList databaseFiles(const QString& argument)
{
    const QFileInfo info(argument);
    if (!info.exists())
        throw storage::StorageError(storage::StorageError::Kind::NotFound, info.absoluteFilePath(),
                                    QStringLiteral("does not exist"));
    if (!info.isDir())
        return {info.absoluteFilePath()};
    QStringList files;
    QDirIterator it(info.absoluteFilePath(), {QStringLiteral("*.sqlite"), QStringLiteral("*.db")}, QDir::Files,
                    QDirIterator::Subdirectories);
    while (it.hasNext())
        files << it.next();
    std::sort(files.begin(), files.end());
    return files;
}

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
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    if (parser.positionalArguments().isEmpty())
        return fail(kCommand, QStringLiteral("give a directory or database files to import"), kExitBadInput);
    try {
        const auto store = openRunStore(parser);
        QStringList files;
        for (const QString& argument : parser.positionalArguments())
            files << databaseFiles(argument);
        int skipped = 0;
        storage::ImportResult total;
        QSet<qint64> sweepIds;
        for (const QString& file : files) {
            if (QFileInfo(file).absoluteFilePath() == store->path())
                continue; // the run database itself may lie in the directory
            try {
                const storage::ImportResult result = store->importRuns(file);
                std::fprintf(
                    stderr, "%s: %d imported, %d already here%s\n", qPrintable(file), result.imported,
                    result.alreadyPresent,
                    result.stillRunning > 0
                        ? qPrintable(QStringLiteral(", %1 still running (import again later)").arg(result.stillRunning))
                        : "");
                total.imported += result.imported;
                total.alreadyPresent += result.alreadyPresent;
                total.stillRunning += result.stillRunning;
            } catch (const storage::StorageError& error) {
                ++skipped;
                std::fprintf(stderr, "skipped %s\n", error.what());
            }
        }
        std::fprintf(stderr, "%lld files: %d runs imported, %d already here, %d still running, %d files skipped\n",
                     static_cast<long long>(files.size()), total.imported, total.alreadyPresent, total.stillRunning,
                     skipped);
        nlohmann::json sweeps = nlohmann::json::array();
        for (const storage::SweepInfo& sweep : store->sweeps()) {
            const QList<storage::RunInfo> runs = store->sweepRuns(sweep.id);
            if (runs.isEmpty())
                continue;
            const SweepSpec spec = parseSweepSpec(sweep.specJson.toStdString(), "sweep", "");
            const auto results = collectResults(expandSweep(spec, "sweep"), runs);
            std::printf("\nsweep %lld (%s): %lld of %d runs\n", static_cast<long long>(sweep.id),
                        qPrintable(sweep.name), static_cast<long long>(runs.size()), sweep.runCount);
            printSweepStatistics(stdout, results);
            nlohmann::json item = sweepStatisticsJson(results);
            item["sweep_id"] = sweep.id;
            item["name"] = sweep.name.toStdString();
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
