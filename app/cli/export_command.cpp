// mantissa-cli export RUN --format csv|json [-o FILE] [--table steps|epochs]
//
// json: one document (metadata, config, steps, epochs, events) to FILE or stdout.
// csv:  the database's columns, one table per file. With -o FILE and no --table, FILE
//       gets the steps and a sibling with "-epochs" before the extension gets the epochs
//       (runs.csv -> runs-epochs.csv); to stdout, or with --table, the one table chosen
//       (default steps), since two tables in one CSV stream would not parse.
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/run_lookup.h"
#include "engine/util/check.h"
#include "storage/run_export.h"
#include "storage/storage_error.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>

#include <cstdio>
#include <functional>

namespace mantissa::cli {

namespace {

constexpr const char* kCommand = "export";

using Writer = std::function<void(QIODevice&)>;

// QSaveFile: a failed export leaves an existing FILE as it was, never half written.
void writeFile(const QString& path, const Writer& write)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly)) {
        throw storage::StorageError(storage::StorageError::Kind::Io, path,
                                    QStringLiteral("cannot write: %1").arg(file.errorString()));
    }
    write(file);
    if (!file.commit()) {
        throw storage::StorageError(storage::StorageError::Kind::Io, path,
                                    QStringLiteral("cannot write: %1").arg(file.errorString()));
    }
    std::fprintf(stderr, "wrote %s\n", qPrintable(QFileInfo(path).absoluteFilePath()));
}

void writeStdout(const Writer& write)
{
    QFile out;
    if (!out.open(stdout, QIODevice::WriteOnly))
        throw ConfigError("cannot write to standard output");
    write(out);
    out.flush();
}

QString epochsSibling(const QString& path)
{
    const QFileInfo info(path);
    const QString suffix = info.suffix().isEmpty() ? QString() : u'.' + info.suffix();
    const QString base = info.suffix().isEmpty() ? info.fileName() : info.completeBaseName();
    return info.dir().filePath(base + QStringLiteral("-epochs") + suffix);
}

storage::ExportTable parseTable(const QString& name)
{
    if (name == QStringLiteral("steps"))
        return storage::ExportTable::Steps;
    if (name == QStringLiteral("epochs"))
        return storage::ExportTable::Epochs;
    throw ConfigError("--table is \"" + name.toStdString() + "\"; expected steps or epochs");
}

} // namespace

int runExportCommand(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(
        "Export a run's per-step and per-epoch rows.\n"
        "json: one document (metadata, config, steps, epochs, events).\n"
        "csv: with -o FILE, FILE holds the steps and FILE-epochs (before the extension: runs.csv,\n"
        "runs-epochs.csv) the epochs; to stdout, or with --table, only that table.");
    parser.addPositionalArgument("run", "The run's id or name.", "RUN");
    addDatabaseOption(parser);
    parser.addOptions({
        {"format", "csv or json.", "format"},
        {{"o", "output"}, "Write to FILE instead of stdout.", "file"},
        {"table", "csv: only this table, steps (the default on stdout) or epochs.", "table"},
    });
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    if (const auto exit =
            requirePositionals(parser, 1, kCommand, "RUN --format csv|json [-o FILE] [--table steps|epochs]"))
        return *exit;
    try {
        const QString format = parser.value("format");
        if (format != QStringLiteral("csv") && format != QStringLiteral("json"))
            throw ConfigError(format.isEmpty() ? std::string("--format is required: csv or json")
                                               : "--format is \"" + format.toStdString() + "\"; expected csv or json");
        if (format == QStringLiteral("json") && parser.isSet("table"))
            throw ConfigError("--table applies to csv; a json export holds every table");
        const auto store = openRunStore(parser);
        const qint64 runId = lookUpRun(*store, parser.positionalArguments().first()).id;
        const QString output = parser.value("output");

        auto csv = [&](storage::ExportTable table) {
            return [&store, runId, table](QIODevice& out) { storage::writeCsv(*store, runId, table, out); };
        };
        if (format == QStringLiteral("json")) {
            const Writer json = [&store, runId](QIODevice& out) { storage::writeJson(*store, runId, out); };
            output.isEmpty() ? writeStdout(json) : writeFile(output, json);
        } else if (parser.isSet("table") || output.isEmpty()) {
            const storage::ExportTable table =
                parseTable(parser.isSet("table") ? parser.value("table") : QStringLiteral("steps"));
            output.isEmpty() ? writeStdout(csv(table)) : writeFile(output, csv(table));
        } else {
            writeFile(output, csv(storage::ExportTable::Steps));
            writeFile(epochsSibling(output), csv(storage::ExportTable::Epochs));
        }
        return kExitOk;
    } catch (const std::exception& error) {
        return reportError(kCommand, error);
    }
}

} // namespace mantissa::cli
