#include "cli/command_line.h"

#include "cli/exit_codes.h"
#include "engine/util/check.h"
#include "storage/database_path.h"

#include <cstdio>

namespace mantissa::cli {

std::optional<int> parseCommandLine(QCommandLineParser& parser, const QStringList& arguments, const char* command)
{
    parser.addHelpOption();
    if (!parser.parse(arguments))
        return fail(command, parser.errorText(), kExitBadInput);
    if (parser.isSet(QStringLiteral("help"))) {
        std::fputs(qPrintable(parser.helpText()), stdout);
        return kExitOk;
    }
    return std::nullopt;
}

void addDatabaseOption(QCommandLineParser& parser)
{
    parser.addOption({QStringLiteral("db"),
                      QStringLiteral("The run database (default: MANTISSA_DB, else "
                                     "~/.local/share/Mantissa/mantissa/runs.sqlite)."),
                      QStringLiteral("file")});
}

std::unique_ptr<storage::RunStore> openRunStore(const QCommandLineParser& parser)
{
    const QString path = storage::resolveDatabasePath(parser.value(QStringLiteral("db")));
    return std::make_unique<storage::RunStore>(path);
}

std::optional<int> requirePositionals(const QCommandLineParser& parser, qsizetype count, const char* command,
                                      const char* usage)
{
    if (parser.positionalArguments().size() == count)
        return std::nullopt;
    return fail(command,
                QStringLiteral("expected %1; usage: mantissa-cli %2 %3")
                    .arg(count == 1 ? QStringLiteral("one argument") : QStringLiteral("%1 arguments").arg(count))
                    .arg(QString::fromLatin1(command), QString::fromLatin1(usage)),
                kExitBadInput);
}

int fail(const char* command, const QString& message, int code)
{
    std::fprintf(stderr, "mantissa-cli %s: %s\n", command, qPrintable(message));
    return code;
}

int reportError(const char* command, const std::exception& error)
{
    return fail(command, QString::fromLocal8Bit(error.what()), kExitBadInput);
}

int positiveOption(const QCommandLineParser& parser, const char* name, int fallback)
{
    if (!parser.isSet(name))
        return fallback;
    bool ok = false;
    const int value = parser.value(name).toInt(&ok);
    if (!ok || value < 1)
        throw ConfigError(std::string("--") + name + " expects an integer >= 1, got \"" +
                          parser.value(name).toStdString() + "\"");
    return value;
}

QStringList splitList(const QString& value)
{
    QStringList items;
    for (const QString& item : value.split(u',')) {
        if (const QString trimmed = item.trimmed(); !trimmed.isEmpty())
            items << trimmed;
    }
    return items;
}

} // namespace mantissa::cli
