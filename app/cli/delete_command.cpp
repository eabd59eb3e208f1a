// mantissa-cli delete RUN: removes a run, its rows and its checkpoint files.
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/run_lookup.h"

#include <cstdio>

namespace mantissa::cli {

int runDeleteCommand(const QStringList& arguments)
{
    constexpr const char* kCommand = "delete";
    QCommandLineParser parser;
    parser.setApplicationDescription("Delete a run: its steps, epochs, events, tags and checkpoint files.\n"
                                     "A run still training is refused.");
    parser.addPositionalArgument("run", "The run's id or name.", "RUN");
    addDatabaseOption(parser);
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    if (const auto exit = requirePositionals(parser, 1, kCommand, "RUN"))
        return *exit;
    try {
        const auto store = openRunStore(parser);
        const storage::RunInfo run = lookUpRun(*store, parser.positionalArguments().first());
        const QStringList kept = store->deleteRun(run.id);
        std::fprintf(stderr, "deleted run %lld (%s)\n", static_cast<long long>(run.id), qPrintable(run.name));
        for (const QString& file : kept)
            std::fprintf(stderr, "warning: could not remove the checkpoint %s; remove it by hand\n", qPrintable(file));
        return kExitOk;
    } catch (const std::exception& error) {
        return reportError(kCommand, error);
    }
}

} // namespace mantissa::cli
