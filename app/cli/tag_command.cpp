// mantissa-cli tag RUN TAG... [--remove]: adds tags to a run (or removes them).
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/run_lookup.h"

#include <cstdio>

namespace mantissa::cli {

int runTagCommand(const QStringList& arguments)
{
    constexpr const char* kCommand = "tag";
    QCommandLineParser parser;
    parser.setApplicationDescription("Add tags to a run, or remove them with --remove. `runs --tag T` filters by tag.");
    parser.addPositionalArgument("run", "The run's id or name.", "RUN");
    parser.addPositionalArgument("tags", "One or more tags.", "TAG...");
    addDatabaseOption(parser);
    parser.addOption({"remove", "Remove the tags instead (an absent tag is ignored)."});
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    QStringList positional = parser.positionalArguments();
    if (positional.size() < 2)
        return fail(kCommand,
                    QStringLiteral("expected RUN and at least one TAG; usage: mantissa-cli tag RUN TAG... [--remove]"),
                    kExitBadInput);
    try {
        const auto store = openRunStore(parser);
        const storage::RunInfo run = lookUpRun(*store, positional.takeFirst());
        const bool remove = parser.isSet("remove");
        for (const QString& tag : positional)
            remove ? store->removeTag(run.id, tag) : store->addTag(run.id, tag);
        const QStringList tags = store->run(run.id).tags;
        std::fprintf(stderr, "run %lld (%s): tags %s\n", static_cast<long long>(run.id), qPrintable(run.name),
                     tags.isEmpty() ? "none" : qPrintable(tags.join(QStringLiteral(", "))));
        return kExitOk;
    } catch (const std::exception& error) {
        return reportError(kCommand, error);
    }
}

} // namespace mantissa::cli
