// mantissa-cli note RUN TEXT: sets the run's free-text notes.
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/run_lookup.h"

#include <cstdio>

namespace mantissa::cli {

int runNoteCommand(const QStringList& arguments)
{
    constexpr const char* kCommand = "note";
    QCommandLineParser parser;
    parser.setApplicationDescription(
        "Set a run's notes (replacing them; \"\" clears them), or add a line with --append.");
    parser.addPositionalArgument("run", "The run's id or name.", "RUN");
    parser.addPositionalArgument("text", "The notes; several words are joined with spaces.", "TEXT...");
    addDatabaseOption(parser);
    parser.addOption({"append", "Add TEXT as a new line after the existing notes."});
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    QStringList positional = parser.positionalArguments();
    if (positional.size() < 2)
        return fail(kCommand, QStringLiteral("expected RUN and TEXT; usage: mantissa-cli note RUN TEXT [--append]"),
                    kExitBadInput);
    try {
        const auto store = openRunStore(parser);
        const storage::RunInfo run = lookUpRun(*store, positional.takeFirst());
        QString notes = positional.join(u' ');
        if (parser.isSet("append") && !run.notes.isEmpty())
            notes = run.notes + u'\n' + notes;
        store->setNotes(run.id, notes);
        std::fprintf(stderr, "run %lld (%s): notes %s\n", static_cast<long long>(run.id), qPrintable(run.name),
                     notes.isEmpty() ? "cleared" : "saved");
        return kExitOk;
    } catch (const std::exception& error) {
        return reportError(kCommand, error);
    }
}

} // namespace mantissa::cli
