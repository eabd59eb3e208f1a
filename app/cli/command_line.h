#pragma once
// What every subcommand does the same way: parse its options (with --help), open the run
// database named by --db / MANTISSA_DB / the default, find a run by id or name, and turn
// an error into a message on stderr and an exit code.
#include "storage/run_store.h"

#include <QCommandLineParser>
#include <QStringList>

#include <exception>
#include <memory>
#include <optional>

namespace mantissa::cli {

// Parses `arguments` (argv without the command word, argv[0] first). Returns an exit code
// when the command must end now: --help printed (0) or a parse error reported (2).
std::optional<int> parseCommandLine(QCommandLineParser& parser, const QStringList& arguments, const char* command);

// Adds --db FILE.
void addDatabaseOption(QCommandLineParser& parser);
// Opens (creating, checking, migrating) the database --db names, else MANTISSA_DB, else
// the per-user default. Throws StorageError naming the file.
std::unique_ptr<storage::RunStore> openRunStore(const QCommandLineParser& parser);

// Exactly `count` positional arguments, else a message naming `usage` and exit code 2.
std::optional<int> requirePositionals(const QCommandLineParser& parser, qsizetype count, const char* command,
                                      const char* usage);

// Prints "mantissa-cli COMMAND: MESSAGE" on stderr and returns `code`.
int fail(const char* command, const QString& message, int code);
// The exit code for an exception escaping a command (always kExitBadInput: a bad option,
// config, run or database), after printing its message.
int reportError(const char* command, const std::exception& error);

// The integer option `name` (at least 1), `fallback` when it is not given. Throws ConfigError
// naming the option when its value is not such an integer.
int positiveOption(const QCommandLineParser& parser, const char* name, int fallback);

// A comma-separated option value, trimmed, empty items dropped.
QStringList splitList(const QString& value);

} // namespace mantissa::cli
