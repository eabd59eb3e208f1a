// mantissa-cli fields: every config field with its default, legal values, unit and meaning, read
// from the engine's config tables, so that the list cannot drift from what the parser accepts.
// --markdown prints docs/config.md's generated tables.
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/text_table.h"
#include "engine/config/config_docs.h"
#include "engine/config/config_field.h"

#include <cstdio>

namespace mantissa::cli {

namespace {

constexpr const char* kCommand = "fields";

QString text(std::string_view view) { return QString::fromUtf8(view.data(), qsizetype(view.size())); }

template <typename Owner>
QString legal(const ConfigField<Owner>& field)
{
    if (field.kind() == FieldKind::Choice)
        return QString::fromStdString(field.choiceKeys());
    if (field.kind() == FieldKind::Boolean)
        return QStringLiteral("true, false");
    return QString::fromStdString(field.rangeText());
}

} // namespace

int runFieldsCommand(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription("Every field of a run config (docs/config.md): default, legal values, meaning.");
    parser.addOption({"markdown", "The tables of docs/config.md, in Markdown."});
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    if (const auto exit = requirePositionals(parser, 0, kCommand, "[--markdown]"))
        return *exit;
    if (parser.isSet("markdown")) {
        std::fputs(configFieldsMarkdown().c_str(), stdout);
        return kExitOk;
    }
    TextTable table;
    table.addColumn(QStringLiteral("field"));
    table.addColumn(QStringLiteral("option"));
    table.addColumn(QStringLiteral("default"));
    table.addColumn(QStringLiteral("legal"));
    table.addColumn(QStringLiteral("meaning"));
    for (const RunField& field : runConfigFields())
        table.addRow({text(field.path), field.option.empty() ? QString() : "--" + text(field.option),
                      QString::fromStdString(field.defaultText()), legal(field), text(field.description)});
    for (const LayerSpecField& field : layerSpecFields())
        table.addRow({"model.layers[]." + text(field.path), QString(), QString::fromStdString(field.defaultText()),
                      legal(field), text(field.description)});
    table.print(stdout);
    std::printf("\nAny field can be set on the command line of train and compare with --set PATH=VALUE.\n");
    return kExitOk;
}

} // namespace mantissa::cli
