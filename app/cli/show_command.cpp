// mantissa-cli show RUN: one run in full: what it trained (the config in a few lines),
// how it ended (status and summary), its epochs and its events, overflows first.
#include "cli/command_line.h"
#include "cli/commands.h"
#include "cli/config_summary.h"
#include "cli/exit_codes.h"
#include "cli/run_format.h"
#include "cli/run_lookup.h"
#include "cli/text_table.h"
#include "engine/model/model.h"
#include "engine/model/tensor_core_alignment.h"
#include "engine/observe/rank_throughput.h"
#include "engine/observe/task_metric.h"

#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>

namespace mantissa::cli {

namespace {

constexpr const char* kCommand = "show";
constexpr int kListedOverflows = 10; // an fp16 run can have thousands; the first say the most

void printField(const QString& label, const QString& value)
{
    std::printf("%-14s %s\n", qPrintable(label.isEmpty() ? label : label + u':'), qPrintable(value));
}

void printHeader(const storage::RunStore& store, const storage::RunInfo& run)
{
    std::printf("run %lld: %s\n", static_cast<long long>(run.id), qPrintable(run.name));
    printField(QStringLiteral("status"), QString::fromLatin1(runStatusName(run.status)));
    if (!run.errorMessage.isEmpty())
        printField(QStringLiteral("message"), run.errorMessage);
    printField(QStringLiteral("created"), formatLocalTime(run.createdAt));
    printField(QStringLiteral("finished"), formatLocalTime(run.finishedAt));
    printField(QStringLiteral("preset"), run.preset.isEmpty() ? QStringLiteral("-") : run.preset);
    printField(QStringLiteral("device"), run.device.isEmpty() ? QStringLiteral("-") : run.device);
    // A data-parallel run: each rank's throughput (run_ranks), one line per rank.
    const QList<RankThroughput> ranks = store.rankThroughput(run.id);
    for (const RankThroughput& rank : ranks)
        printField(&rank == &ranks.front() ? QStringLiteral("ranks") : QString(),
                   QString::fromStdString(describeRanks(std::span(&rank, 1))));
    // One line per 16-bit type and the oneDNN kernels used, aligned under the first.
    for (const QString& line : run.kernels.split(u'\n', Qt::SkipEmptyParts))
        printField(line == run.kernels.section(u'\n', 0, 0) ? QStringLiteral("kernels") : QString(), line);
    printField(QStringLiteral("version"), run.engineVersion.isEmpty() ? QStringLiteral("-") : run.engineVersion);
    // Runs recorded before fingerprints were stored have none.
    printField(QStringLiteral("data"), run.dataFingerprint.isEmpty()
                                           ? QStringLiteral("-")
                                           : QStringLiteral("fingerprint ") + run.dataFingerprint);
    // An imported model: the file it was read from and the hash of the copy the store keeps
    // (`train --from-run` trains it again from that copy).
    if (!run.modelSha256.isEmpty()) {
        printField(QStringLiteral("model"), run.modelSource);
        printField(QStringLiteral("model sha256"), run.modelSha256 + QStringLiteral(" (stored)"));
    }
    if (!run.dataPreparation.isEmpty())
        printField(QString(), run.dataPreparation);
    if (run.groupId) {
        QString group = QString::number(*run.groupId);
        for (const storage::GroupInfo& info : store.groups()) {
            if (info.id == *run.groupId)
                group += QStringLiteral(" (%1)").arg(info.name);
        }
        printField(QStringLiteral("group"), group);
    }
    if (run.parent) {
        QString parent = QStringLiteral("a run since deleted");
        if (run.parent->runId) {
            parent = QStringLiteral("run %1").arg(*run.parent->runId);
            try {
                parent += QStringLiteral(" (%1)").arg(store.run(*run.parent->runId).name);
            } catch (const std::exception&) {}
        }
        printField(QStringLiteral("forked from"), QStringLiteral("%1 after step %2").arg(parent).arg(run.parent->step));
    }
    // Its own forks, one line each, by fork step (`runs --tree` shows their forks in turn).
    storage::RunFilter forksOfRun;
    forksOfRun.parentRunId = run.id;
    QList<storage::RunInfo> forks = store.listRuns(forksOfRun);
    std::sort(forks.begin(), forks.end(), [](const storage::RunInfo& a, const storage::RunInfo& b) {
        return std::pair(a.parent->step, a.id) < std::pair(b.parent->step, b.id);
    });
    for (const storage::RunInfo& fork : forks)
        printField(&fork == &forks.front() ? QStringLiteral("forks") : QString(),
                   QStringLiteral("run %1 (%2) after step %3").arg(fork.id).arg(fork.name).arg(fork.parent->step));
    if (!run.tags.isEmpty())
        printField(QStringLiteral("tags"), run.tags.join(QStringLiteral(", ")));
    if (!run.notes.isEmpty())
        printField(QStringLiteral("notes"), run.notes);
    // A fine-tune names the checkpoint it started from (train --init-from).
    const QJsonObject training =
        QJsonDocument::fromJson(run.configJson.toUtf8()).object().value(u"training").toObject();
    if (const QString initFrom = training.value(u"init_from").toString(); !initFrom.isEmpty())
        printField(QStringLiteral("weights from"), initFrom);
}

void printConfig(const storage::RunInfo& run)
{
    std::printf("\nconfig\n");
    for (const auto& [label, text] : summarizeConfig(run.configJson))
        printField(QStringLiteral("  ") + label, text);
}

// The engine's tensor-core alignment advice for a 16-bit run (nothing for fp32 or when all is
// aligned); a config this version cannot parse is already reported by printConfig.
void printTensorCoreAdvice(const storage::RunInfo& run)
{
    std::vector<std::string> lines;
    try {
        lines = tensorCoreAdvice(parseRunConfig(run.configJson.toStdString(), "the stored config")).messages();
    } catch (const ConfigError&) {
        return;
    }
    if (lines.empty())
        return;
    std::printf("\ntensor cores\n");
    for (const std::string& line : lines)
        std::printf("  %s\n", line.c_str());
}

// Which GEMMs a recipe run quantised (and which it kept, and why); nothing for a 16-bit run.
void printRecipeCoverage(const storage::RunInfo& run)
{
    GemmCoverage coverage;
    try {
        const RunConfig config = parseRunConfig(run.configJson.toStdString(), "the stored config");
        coverage = plannedGemmCoverage(config.model, config.precision, config.recipe);
    } catch (const ConfigError&) {
        return;
    }
    if (coverage.summary().empty())
        return;
    std::printf("\n%s\n  %s\n", coverage.recipe != GemmRecipe::None ? "recipe" : "formats", coverage.summary().c_str());
    if (const std::optional<std::string> warning = coverage.warning())
        std::printf("  warning: %s\n", warning->c_str());
}

void printSummary(const storage::RunInfo& run, const QList<EpochRecord>& epochs)
{
    const storage::StoredSummary& s = run.summary;
    std::printf("\nsummary\n");
    printField(QStringLiteral("  steps"),
               QStringLiteral("%1 (%2 skipped)").arg(formatCount(s.steps), formatCount(s.skippedSteps)));
    printField(QStringLiteral("  train loss"), formatValue(s.finalTrainLoss));
    const TaskMetric metric = taskMetricOfStored(run.configJson.toStdString());
    if (metric == TaskMetric::Accuracy) {
        printField(QStringLiteral("  test acc"),
                   QStringLiteral("%1 final, %2 best")
                       .arg(formatPercent(s.finalTestAccuracy), formatPercent(s.bestTestAccuracy)));
    } else {
        const MetricFigures figures = metricFigures(metric, epochs);
        printField(QStringLiteral("  test ") + QString::fromLatin1(taskMetricName(metric)),
                   QStringLiteral("%1 final, %2 best")
                       .arg(QString::fromStdString(formatTaskMetric(metric, figures.final)),
                            QString::fromStdString(formatTaskMetric(metric, figures.best))));
    }
    if (hasValidation(epochs)) {
        const MetricFigures figures = metricFigures(metric, epochs, EvaluationSet::Validation);
        printField(QStringLiteral("  validation ") +
                       QString::fromLatin1(metric == TaskMetric::Accuracy ? "acc" : taskMetricName(metric)),
                   QStringLiteral("%1 final, %2 best")
                       .arg(QString::fromStdString(formatTaskMetric(metric, figures.final)),
                            QString::fromStdString(formatTaskMetric(metric, figures.best))));
    }
    printField(QStringLiteral("  loss scale"), formatValue(s.finalLossScale));
    printField(QStringLiteral("  throughput"), formatRate(s.samplesPerSecond));
    printField(QStringLiteral("  time"), formatSeconds(run.wallSeconds));
    printField(QStringLiteral("  peak memory"), formatMemory(run.peakMemoryBytes));
}

// A text run's test loss is also shown in bits per character; a regression run has RMSE in
// place of the accuracies. A run with a validation split has its loss and metric after the test's.
void printEpochs(const QList<EpochRecord>& epochs, TaskMetric metric)
{
    const bool bitsPerCharacter = metric == TaskMetric::BitsPerCharacter;
    const bool accuracy = metric != TaskMetric::Rmse;
    const bool validation = hasValidation(epochs);
    const QString validationMetric = metric == TaskMetric::Accuracy ? QStringLiteral("val acc")
                                     : bitsPerCharacter             ? QStringLiteral("val bpc")
                                                                    : QStringLiteral("val RMSE");
    if (epochs.isEmpty()) {
        std::printf("\nepochs: none completed\n");
        return;
    }
    using Align = TextTable::Align;
    TextTable table;
    table.addColumn(QStringLiteral("epoch"), Align::Right);
    table.addColumn(QStringLiteral("train loss"), Align::Right);
    if (accuracy)
        table.addColumn(QStringLiteral("train acc"), Align::Right);
    table.addColumn(QStringLiteral("test loss"), Align::Right);
    if (bitsPerCharacter)
        table.addColumn(QStringLiteral("test bpc"), Align::Right);
    table.addColumn(accuracy ? QStringLiteral("test acc") : QStringLiteral("test RMSE"), Align::Right);
    if (validation) {
        table.addColumn(QStringLiteral("val loss"), Align::Right);
        table.addColumn(validationMetric, Align::Right);
    }
    table.addColumn(QStringLiteral("time"), Align::Right);
    for (const EpochRecord& e : epochs) {
        QStringList row{QString::number(e.epoch), formatValue(e.trainLoss)};
        if (accuracy)
            row << formatPercent(e.trainAccuracy);
        row << formatValue(e.testLoss);
        if (bitsPerCharacter)
            row << QString::number(mantissa::bitsPerCharacter(e.testLoss), 'f', 3);
        row << (accuracy ? formatPercent(e.testAccuracy)
                         : QString::fromStdString(formatTaskMetric(metric, taskMetricValue(metric, e.testLoss, NAN))));
        if (validation)
            row << formatValue(e.validationLoss)
                << QString::fromStdString(
                       formatTaskMetric(metric, epochMetricValue(metric, e, EvaluationSet::Validation)));
        row << formatSeconds(e.wallSeconds);
        table.addRow(row);
    }
    std::printf("\nepochs\n");
    table.print(stdout);
}

QString eventDetail(const EventRecord& e)
{
    switch (e.kind) {
    case EventKind::Overflow: {
        QString detail = QStringLiteral("non-finite gradient in %1; loss scale %2 -> %3")
                             .arg(e.parameter.empty() ? QStringLiteral("?") : QString::fromStdString(e.parameter))
                             .arg(formatValue(e.scaleBefore), formatValue(e.scaleAfter));
        if (const auto& where = e.location) {
            detail += QStringLiteral("; first non-finite: %1 %2 (%3 of %4 values, largest finite %5)")
                          .arg(QString::fromStdString(where->tensor), QString::fromLatin1(tensorKindName(where->kind)),
                               QString::fromStdString(describeNonFinite(where->nonFiniteCount, where->nanCount)),
                               QString::number(where->count), formatValue(where->largestFinite, 4));
        }
        return detail;
    }
    case EventKind::ScaleChange:
        return QStringLiteral("loss scale %1 -> %2").arg(formatValue(e.scaleBefore), formatValue(e.scaleAfter));
    case EventKind::Divergence:
    case EventKind::Finished:
    case EventKind::Error: break;
    }
    return QString::fromStdString(e.message);
}

void printEvents(const QList<EventRecord>& events)
{
    qsizetype overflows = 0, scaleChanges = 0;
    for (const EventRecord& e : events) {
        overflows += e.kind == EventKind::Overflow;
        scaleChanges += e.kind == EventKind::ScaleChange;
    }
    std::printf("\nevents: %lld (%lld overflow, %lld loss-scale change)\n", static_cast<long long>(events.size()),
                static_cast<long long>(overflows), static_cast<long long>(scaleChanges));
    if (events.isEmpty())
        return;
    // Overflows first: the first ones show where fp16 runs out of range, and which
    // parameter goes first. Loss-scale changes follow from them and are only counted.
    using Align = TextTable::Align;
    TextTable table;
    table.addColumn(QStringLiteral("step"), Align::Right);
    table.addColumn(QStringLiteral("kind"));
    table.addColumn(QStringLiteral("detail"));
    qsizetype listed = 0;
    for (const EventRecord& e : events) {
        if (e.kind == EventKind::Overflow && listed++ < kListedOverflows)
            table.addRow({QString::number(e.step), QString::fromLatin1(eventKindName(e.kind)), eventDetail(e)});
    }
    for (const EventRecord& e : events) {
        if (e.kind != EventKind::Overflow && e.kind != EventKind::ScaleChange)
            table.addRow({QString::number(e.step), QString::fromLatin1(eventKindName(e.kind)), eventDetail(e)});
    }
    if (!table.isEmpty())
        table.print(stdout);
    if (overflows > kListedOverflows)
        std::printf("(%lld more overflow events; `mantissa-cli export RUN --format json` has them all)\n",
                    static_cast<long long>(overflows - kListedOverflows));
}

void printCheckpoints(const QList<storage::CheckpointInfo>& checkpoints)
{
    if (checkpoints.isEmpty())
        return;
    std::printf("\ncheckpoints (the last one is what `train --init-from RUN` starts from; each is a state `fork RUN "
                "--at STEP` continues)\n");
    for (const storage::CheckpointInfo& c : checkpoints)
        std::printf("  epoch %d, step %lld: %s\n", c.epoch, static_cast<long long>(c.step), qPrintable(c.absolutePath));
}

} // namespace

int runShowCommand(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription("Show a run: config, summary, epochs and events.");
    parser.addPositionalArgument("run", "The run's id or name.", "RUN");
    addDatabaseOption(parser);
    parser.addOption({"config", "Print the run's full config JSON instead (a file `train` accepts)."});
    if (const auto exit = parseCommandLine(parser, arguments, kCommand))
        return *exit;
    if (const auto exit = requirePositionals(parser, 1, kCommand, "RUN [--config]"))
        return *exit;
    try {
        const auto store = openRunStore(parser);
        const storage::RunInfo run = lookUpRun(*store, parser.positionalArguments().first());
        if (parser.isSet("config")) {
            std::printf("%s\n", qPrintable(run.configJson));
            return kExitOk;
        }
        printHeader(*store, run);
        printConfig(run);
        printTensorCoreAdvice(run);
        printRecipeCoverage(run);
        const QList<EpochRecord> epochs = store->epochs(run.id);
        printSummary(run, epochs);
        printEpochs(epochs, taskMetricOfStored(run.configJson.toStdString()));
        printEvents(store->events(run.id));
        printCheckpoints(store->checkpoints(run.id));
        return kExitOk;
    } catch (const std::exception& error) {
        return reportError(kCommand, error);
    }
}

} // namespace mantissa::cli
