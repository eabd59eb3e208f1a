// mantissa-cli runs: the runs in the database, newest first, optionally filtered.
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/run_format.h"
#include "cli/text_table.h"
#include "engine/observe/task_metric.h"
#include "engine/util/check.h"

#include <cstdio>

namespace mantissa::cli {

namespace {

// The run's metric at its last epoch: "84.10%" for a classifier, "RMSE 0.1234", "2.314 bpc";
// read from its epochs where the summary row does not hold it.
QString finalMetricText(const storage::RunStore& store, const storage::RunInfo& run)
{
    const TaskMetric metric = taskMetricOfStored(run.configJson.toStdString());
    if (metric == TaskMetric::Accuracy)
        return formatPercent(run.summary.finalTestAccuracy);
    const double value = metricFigures(metric, store.epochs(run.id)).final;
    if (!std::isfinite(value))
        return QStringLiteral("-");
    const QString text = QString::fromStdString(formatTaskMetric(metric, value));
    return metric == TaskMetric::Rmse ? QStringLiteral("RMSE ") + text : text + QStringLiteral(" bpc");
}

} // namespace

namespace {

constexpr const char* kCommand = "runs";

storage::RunFilter filterFromOptions(const QCommandLineParser& parser)
{
    storage::RunFilter filter;
    if (parser.isSet("status")) {
        filter.status = parseRunStatus(parser.value("status").toStdString());
        if (!filter.status)
            throw ConfigError("--status is \"" + parser.value("status").toStdString() +
                              "\"; expected running, finished, stopped, diverged, failed or interrupted");
    }
    filter.preset = parser.value("preset");
    filter.precision = parser.value("precision");
    filter.tag = parser.value("tag");
    if (parser.isSet("group")) {
        bool ok = false;
        filter.groupId = parser.value("group").toLongLong(&ok);
        if (!ok)
            throw ConfigError("--group expects a comparison group id, got \"" + parser.value("group").toStdString() +
                              "\"");
    }
    if (parser.isSet("limit")) {
        bool ok = false;
        filter.limit = parser.value("limit").toInt(&ok);
        if (!ok || filter.limit < 1)
            throw ConfigError("--limit expects a number >= 1, got \"" + parser.value("limit").toStdString() + "\"");
    }
    return filter;
}

} // namespace

int runRunsCommand(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription("List the recorded runs, newest first.");
    addDatabaseOption(parser);
    parser.addOptions({
        {"status", "Only runs with this status: running, finished, stopped, diverged, failed, interrupted.", "status"},
        {"preset", "Only runs of this preset (or config file stem).", "name"},
        {"precision", "Only runs in this precision mode.", "mode"},
        {"group", "Only runs of this comparison group.", "id"},
        {"tag", "Only runs with this tag.", "tag"},
        {"limit", "At most this many runs.", "n"},
    });
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    if (const auto exit = requirePositionals(
            parser, 0, kCommand, "[--status S] [--preset P] [--precision M] [--group G] [--tag T] [--limit N]"))
        return *exit;
    try {
        const storage::RunFilter filter = filterFromOptions(parser);
        const auto store = openRunStore(parser);
        const QList<storage::RunInfo> runs = store->listRuns(filter);
        if (runs.isEmpty()) {
            std::fprintf(stderr, "no runs in %s match\n", qPrintable(store->path()));
            return kExitOk;
        }
        using Align = TextTable::Align;
        TextTable table;
        table.addColumn(QStringLiteral("id"), Align::Right);
        table.addColumn(QStringLiteral("name"));
        table.addColumn(QStringLiteral("status"));
        table.addColumn(QStringLiteral("precision"));
        table.addColumn(QStringLiteral("steps"), Align::Right);
        table.addColumn(QStringLiteral("skipped"), Align::Right);
        table.addColumn(QStringLiteral("test metric"), Align::Right);
        table.addColumn(QStringLiteral("time"), Align::Right);
        table.addColumn(QStringLiteral("created"));
        table.addColumn(QStringLiteral("group"), Align::Right);
        table.addColumn(QStringLiteral("tags"));
        for (const storage::RunInfo& run : runs) {
            table.addRow({QString::number(run.id), run.name, QString::fromLatin1(runStatusName(run.status)),
                          run.precision, formatCount(run.summary.steps), formatCount(run.summary.skippedSteps),
                          finalMetricText(*store, run), formatSeconds(run.wallSeconds), formatLocalTime(run.createdAt),
                          run.groupId ? QString::number(*run.groupId) : QStringLiteral("-"),
                          run.tags.join(QStringLiteral(", "))});
        }
        table.print(stdout);
        return kExitOk;
    } catch (const std::exception& error) {
        return reportError(kCommand, error);
    }
}

} // namespace mantissa::cli
