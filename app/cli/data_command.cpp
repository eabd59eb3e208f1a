// mantissa-cli data PATH: what a dataset holds before any training (source, samples, shapes,
// the classes' histogram, per-feature ranges, memory, fingerprint, problems found), read and
// split exactly as a training run would (engine/data/data_summary.h computes the figures).
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "engine/config/config_field.h"
#include "engine/config/run_config.h"
#include "engine/data/data_summary.h"
#include "engine/data/file_dataset.h"

#include <cstdio>

namespace mantissa::cli {

namespace {

constexpr const char* kCommand = "data";
constexpr const char* kUsage = "PATH|DATASET [--data-format F] [--task T] [--set data.FIELD=VALUE ...]";

} // namespace

int runDataCommand(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(
        "Read a dataset as a training run would and print what it holds: the source, the samples of each split, "
        "the shapes, the classes' histogram, per-channel or per-feature ranges, the size in memory, the "
        "fingerprint and the problems found. PATH is a file or folder of your data (docs/data.md), or a built-in "
        "dataset's name. Exit status 2 when the data cannot be read.");
    parser.addPositionalArgument("path", "The file or folder, or a built-in dataset (fashion-mnist, ...).", "PATH");
    parser.addOption({"data-format",
                      "How PATH is read where its extension does not tell: " +
                          QString::fromStdString(enumKeyList<DataFormat>()) + ".",
                      "format"});
    parser.addOption({"task",
                      "classification or regression, where the labels do not tell (" +
                          QString::fromStdString(enumKeyList<DataTask>()) + ").",
                      "task"});
    parser.addOption(
        {"set", "A data field, as data.FIELD=VALUE (repeatable): --set data.label_column=1.", "path=value"});
    parser.addOption({"seed", "The seed of the validation split (default 42, as training.seed).", "n", "42"});
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    if (const auto exit = requirePositionals(parser, 1, kCommand, kUsage))
        return *exit;
    try {
        RunConfig config;
        if (parser.isSet("data-format"))
            runConfigField("data.format").setText(config, parser.value("data-format").toStdString(), "--data-format");
        if (parser.isSet("task"))
            runConfigField("data.task").setText(config, parser.value("task").toStdString(), "--task");
        useDataSource(config.data, parser.positionalArguments().first().toStdString());
        for (const QString& assignment : parser.values("set")) {
            const qsizetype eq = assignment.indexOf('=');
            const std::string path = assignment.left(eq).trimmed().toStdString();
            const RunField* field = eq > 0 && path.starts_with("data.") ? findRunConfigField(path) : nullptr;
            if (!field)
                return fail(kCommand,
                            QStringLiteral("--set %1: expected data.FIELD=VALUE with a data field of docs/config.md")
                                .arg(assignment),
                            kExitBadInput);
            field->setText(config, assignment.mid(eq + 1).trimmed().toStdString(), "--set " + path);
        }
        bool ok = false;
        config.training.seed = parser.value("seed").toULongLong(&ok);
        if (!ok)
            return fail(kCommand, QStringLiteral("--seed is \"%1\"; expected a whole number").arg(parser.value("seed")),
                        kExitBadInput);
        validateDataSpec(config.data);
        const DatasetSplits splits = loadDatasets(config.data, config.training.seed);
        std::fputs(dataSummaryText(summarizeData(splits, config.data)).c_str(), stdout);
        return kExitOk;
    } catch (const std::exception& e) {
        return reportError(kCommand, e);
    }
}

} // namespace mantissa::cli
