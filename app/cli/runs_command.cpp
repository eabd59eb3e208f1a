// mantissa-cli runs: the runs in the database, newest first, optionally filtered.
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/run_format.h"
#include "cli/run_lookup.h"
#include "cli/text_table.h"
#include "engine/observe/task_metric.h"
#include "engine/util/check.h"

#include <QHash>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <utility>

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

// --tree: each run followed by its forks (by fork step), indented under it the way `ps --forest`
// draws processes; a fork whose parent is not listed starts a tree of its own. Returns the runs
// in that order with each one's depth.
QList<std::pair<const storage::RunInfo*, int>> forkTreeOrder(const QList<storage::RunInfo>& runs)
{
    QHash<qint64, const storage::RunInfo*> listed;
    for (const storage::RunInfo& run : runs)
        listed.insert(run.id, &run);
    QHash<qint64, QList<const storage::RunInfo*>> forks;
    QList<const storage::RunInfo*> roots;
    for (const storage::RunInfo& run : runs) {
        if (run.parent && run.parent->runId && listed.contains(*run.parent->runId))
            forks[*run.parent->runId] << &run;
        else
            roots << &run;
    }
    for (auto& children : forks)
        std::sort(children.begin(), children.end(), [](const storage::RunInfo* a, const storage::RunInfo* b) {
            return std::pair(a->parent->step, a->id) < std::pair(b->parent->step, b->id);
        });
    QList<std::pair<const storage::RunInfo*, int>> order;
    const std::function<void(const storage::RunInfo*, int)> visit = [&](const storage::RunInfo* run, int depth) {
        order << std::pair(run, depth);
        for (const storage::RunInfo* fork : forks.value(run->id))
            visit(fork, depth + 1);
    };
    for (const storage::RunInfo* root : roots)
        visit(root, 0);
    return order;
}

QString indentedName(const QString& name, int depth)
{
    return depth == 0 ? name : QString(2 * (depth - 1) + 1, u' ') + QStringLiteral("\\_ ") + name;
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
        {"forks-of", "Only the forks of this run (id or name).", "run"},
        {"tree", "Each run followed by its forks, indented under it (the runs listed, newest first)."},
    });
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    if (const auto exit = requirePositionals(
            parser, 0, kCommand,
            "[--status S] [--preset P] [--precision M] [--group G] [--tag T] [--forks-of RUN] [--limit N] [--tree]"))
        return *exit;
    try {
        storage::RunFilter filter = filterFromOptions(parser);
        const auto store = openRunStore(parser);
        if (parser.isSet("forks-of"))
            filter.parentRunId = lookUpRun(*store, parser.value("forks-of")).id;
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
        table.addColumn(QStringLiteral("forked from"));
        table.addColumn(QStringLiteral("tags"));
        QList<std::pair<const storage::RunInfo*, int>> order;
        if (parser.isSet("tree"))
            order = forkTreeOrder(runs);
        else
            for (const storage::RunInfo& run : runs)
                order << std::pair(&run, 0);
        for (const auto& [listed, depth] : order) {
            const storage::RunInfo& run = *listed;
            table.addRow({QString::number(run.id), indentedName(run.name, depth),
                          QString::fromLatin1(runStatusName(run.status)), run.precision, formatCount(run.summary.steps),
                          formatCount(run.summary.skippedSteps), finalMetricText(*store, run),
                          formatSeconds(run.wallSeconds), formatLocalTime(run.createdAt),
                          run.groupId ? QString::number(*run.groupId) : QStringLiteral("-"), formatLineage(run.parent),
                          run.tags.join(QStringLiteral(", "))});
        }
        table.print(stdout);
        return kExitOk;
    } catch (const std::exception& error) {
        return reportError(kCommand, error);
    }
}

} // namespace mantissa::cli
