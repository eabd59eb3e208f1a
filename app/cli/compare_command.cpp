// mantissa-cli compare: the same config trained once per precision, one after the other,
// in one comparison group, then a results table. Same seed, so the same initial weights
// (drawn per parameter from the seed and its name, whatever the precision) and the same
// data order (from the seed and the epoch): the precision is the only difference.
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/interrupt.h"
#include "cli/recorded_run.h"
#include "cli/run_format.h"
#include "cli/text_table.h"
#include "cli/train_options.h"
#include "engine/train/training_backend.h"
#include "engine/util/check.h"

#include <cstdio>
#include <iostream>
#include <unistd.h>

namespace mantissa::cli {

namespace {

constexpr const char* kCommand = "compare";

std::vector<PrecisionMode> parsePrecisions(const QString& value)
{
    std::vector<PrecisionMode> modes;
    for (const QString& name : splitList(value))
        modes.push_back(parseEnumOrThrow<PrecisionMode>(name.toStdString(), "--precisions"));
    if (modes.empty())
        throw ConfigError("--precisions is required, for example --precisions fp32,mixed-fp16");
    return modes;
}

QString groupName(const RunConfig& config, const std::vector<PrecisionMode>& modes)
{
    QStringList names;
    for (PrecisionMode mode : modes)
        names << QString::fromStdString(precisionModeName(mode));
    return QStringLiteral("%1: %2").arg(QString::fromStdString(config.name), names.join(QStringLiteral(" vs ")));
}

// The run's metric after its last epoch ("87.51%", "0.1234"); "-" before the first.
QString testMetric(const RecordedRun& run)
{
    if (run.summary.epochs == 0)
        return QStringLiteral("-");
    return QString::fromStdString(
        formatTaskMetric(run.metric, taskMetricValue(run.metric, run.summary.testLoss, run.summary.testAccuracy)));
}

// Speed-up over the first run (the baseline): its wall time over this run's.
double speedup(const RecordedRun& baseline, const RecordedRun& run)
{
    return baseline.summary.wallSeconds / run.summary.wallSeconds;
}

void printTable(const std::vector<RecordedRun>& runs, std::int64_t batchSize)
{
    using Align = TextTable::Align;
    TextTable table;
    table.addColumn(QStringLiteral("precision"));
    table.addColumn(QStringLiteral("batch"), Align::Right);
    // The runs share one config, so one metric.
    const TaskMetric metric = runs.empty() ? TaskMetric::Accuracy : runs.front().metric;
    table.addColumn(metric == TaskMetric::Accuracy
                        ? QStringLiteral("test acc")
                        : QStringLiteral("test ") + QString::fromLatin1(taskMetricName(metric)),
                    Align::Right);
    table.addColumn(QStringLiteral("time"), Align::Right);
    table.addColumn(QStringLiteral("speedup"), Align::Right);
    table.addColumn(QStringLiteral("skipped"), Align::Right);
    table.addColumn(QStringLiteral("loss scale"), Align::Right);
    table.addColumn(QStringLiteral("peak memory"), Align::Right);
    table.addColumn(QStringLiteral("status"));
    table.addColumn(QStringLiteral("run"));
    for (const RecordedRun& run : runs) {
        const RunSummary& s = run.summary;
        table.addRow({QString::fromStdString(precisionModeName(run.precision)), QString::number(batchSize),
                      testMetric(run), formatSeconds(s.wallSeconds), formatSpeedup(speedup(runs.front(), run)),
                      QString::number(s.skippedSteps), formatValue(s.finalLossScale), formatMemory(qint64(s.peakBytes)),
                      runStatusName(s.status), QStringLiteral("%1 (%2)").arg(run.runId).arg(run.name)});
    }
    table.print(stdout);
}

nlohmann::json resultsJson(const std::vector<RecordedRun>& runs, qint64 groupId, const QString& groupName,
                           std::int64_t batchSize)
{
    nlohmann::json list = nlohmann::json::array();
    for (const RecordedRun& run : runs) {
        nlohmann::json item = run.toJson();
        item["name"] = run.name.toStdString();
        item["precision"] = precisionModeName(run.precision);
        item["batch_size"] = batchSize;
        item["speedup"] = speedup(runs.front(), run);
        item["peak_memory_bytes"] = run.summary.peakBytes;
        list.push_back(std::move(item));
    }
    return {{"group_id", groupId}, {"group", groupName.toStdString()}, {"runs", std::move(list)}};
}

// A diverged run is a result of the comparison (pure fp16 failing is the point of many),
// not a failure of the command; a failed one (an error, the database) is.
int exitCode(const std::vector<RecordedRun>& runs)
{
    for (const RecordedRun& run : runs) {
        if (run.summary.status == RunStatus::Failed)
            return kExitRunFailed;
    }
    return kExitOk;
}

} // namespace

int runCompareCommand(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(
        "Train the same config once per precision (same seed, initial weights and data order), record the\n"
        "runs in one comparison group and print a results table, then a JSON line on stdout.\n"
        "Exit codes: 0 every run finished, stopped or diverged (a result), 1 a run failed, 2 bad input.");
    parser.addPositionalArgument("config", "A run config JSON file (or use --preset).", "[CONFIG.json]");
    addTrainOptions(parser);
    addDatabaseOption(parser);
    parser.addOption({"precisions", "Comma-separated precisions, the first is the baseline: fp32,mixed-fp16.", "list"});
    parser.addOption({"group-name", "Name of the comparison group (default: \"<config>: fp32 vs ...\").", "name"});
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    try {
        if (parser.isSet("precision"))
            throw ConfigError("compare takes --precisions LIST (for example fp32,mixed-fp16), not --precision");
        RunConfig config = runConfigFromOptions(parser, parser.positionalArguments());
        const std::vector<PrecisionMode> modes = parsePrecisions(parser.value("precisions"));
        const auto store = openRunStore(parser);
        BackendSelection selection = selectBackend(config);
        std::fprintf(stderr, "%s: batch %lld, %s; %s\n", config.name.c_str(),
                     static_cast<long long>(config.training.batchSize), selection.backend->name().c_str(),
                     selection.reason.c_str());
        // Loaded once: every run sees exactly the same samples.
        const DatasetSplits data = loadDatasets(config.data, config.training.seed);

        const QString name = parser.isSet("group-name") ? parser.value("group-name") : groupName(config, modes);
        const qint64 groupId = store->createGroup(name);
        std::fprintf(stderr, "comparison group %lld (%s)\n", static_cast<long long>(groupId), qPrintable(name));

        InterruptHandler interruptHandler;
        std::vector<RecordedRun> runs;
        for (PrecisionMode mode : modes) {
            if (InterruptHandler::interrupted()) {
                std::fprintf(stderr, "interrupted: the remaining precisions are not trained\n");
                break;
            }
            config.precision = mode;
            std::fprintf(stderr, "\n== %s ==\n", precisionModeName(mode).c_str());
            RecordingOptions recording;
            recording.groupId = groupId;
            recording.interactive = isatty(STDERR_FILENO) != 0;
            runs.push_back(trainRecorded(*store, config, *selection.backend, data, recording));
        }
        if (runs.empty())
            return kExitOk;
        std::fputs("\n", stderr);
        std::fflush(stderr);
        printTable(runs, config.training.batchSize);
        std::cout << resultsJson(runs, groupId, name, config.training.batchSize).dump() << std::endl;
        return exitCode(runs);
    } catch (const std::exception& error) {
        return reportError(kCommand, error);
    }
}

} // namespace mantissa::cli
