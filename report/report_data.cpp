#include "report/report_data.h"

#include "engine/model/model_file.h"
#include "engine/observe/bits_per_character.h"
#include "engine/precision/loss_scaler.h"
#include "engine/util/build_identity.h"
#include "report/report_format.h"

#include <QHash>

#include <algorithm>
#include <cmath>

namespace mantissa::report {

namespace {

RunData loadRun(const RunStore& store, qint64 runId)
{
    RunData run;
    run.info = store.run(runId);
    run.steps = store.steps(runId);
    run.epochs = store.epochs(runId);
    run.events = store.events(runId);
    run.ranks = store.rankThroughput(runId);
    run.shadow = store.shadowRecords(runId);
    run.device = parseDeviceDescription(run.info.device);
    try {
        run.config = parseRunConfig(run.info.configJson.toStdString(), run.info.name.toStdString());
        run.model = validateModel(run.config->model);
    } catch (const Error& e) {
        // A config written by another version may not parse here: the report still shows
        // the stored JSON and everything the rows say.
        run.configError = QString::fromUtf8(e.what());
    }
    if (run.config && !run.config->model.onnx.empty()) {
        // The bytes the run trained, wherever the file has gone since; described by the ONNX
        // support the program installed (model_file.h).
        try {
            RunConfig stored = *run.config;
            stored.model.onnx = store.modelFilePath(run.info).toStdString();
            run.modelFile = std::make_shared<const ModelFileDescription>(describeModelFile(stored));
        } catch (const Error& e) {
            run.modelFileError = QString::fromUtf8(e.what());
        }
    }
    return run;
}

// Labels tell runs apart in legends and tables: the precision reads best ("fp32" vs
// "mixed-fp16"), but two runs of one precision need their names.
void assignLabels(QList<RunData>& runs)
{
    QHash<QString, int> uses;
    for (const RunData& run : runs)
        ++uses[run.precision()];
    for (RunData& run : runs) {
        const QString precision = run.precision();
        run.label = uses.value(precision) == 1 && !precision.isEmpty() ? precision : run.info.name;
    }
}

} // namespace

bool RunData::isIncomplete() const
{
    return info.status == RunStatus::Running || info.status == RunStatus::Interrupted;
}

qint64 RunData::stepCount() const { return info.summary.steps.value_or(steps.size()); }

qint64 RunData::skippedStepCount() const
{
    if (info.summary.skippedSteps)
        return *info.summary.skippedSteps;
    return std::count(steps.skipped.cbegin(), steps.skipped.cend(), true);
}

std::optional<double> RunData::finalTestAccuracy() const
{
    if (info.summary.finalTestAccuracy)
        return info.summary.finalTestAccuracy;
    if (!epochs.isEmpty())
        return epochs.last().testAccuracy;
    return std::nullopt;
}

bool RunData::reportsBitsPerCharacter() const { return config && mantissa::reportsBitsPerCharacter(*config); }

TaskMetric RunData::metric() const { return config ? taskMetricOf(*config) : TaskMetric::Accuracy; }

TaskMetric ReportData::metric() const
{
    if (runs.isEmpty())
        return TaskMetric::Accuracy;
    const TaskMetric first = runs.front().metric();
    for (const RunData& run : runs)
        if (run.metric() != first)
            return TaskMetric::Accuracy;
    return first;
}

QString ReportData::lossName() const
{
    return metric() == TaskMetric::Rmse ? QStringLiteral("loss (mean squared error)")
                                        : QStringLiteral("loss (cross-entropy)");
}

bool ReportData::reportsBitsPerCharacter() const
{
    return !runs.isEmpty() &&
           std::all_of(runs.cbegin(), runs.cend(), [](const RunData& run) { return run.reportsBitsPerCharacter(); });
}

std::optional<double> RunData::throughput() const
{
    if (info.summary.samplesPerSecond)
        return info.summary.samplesPerSecond;
    double sum = 0;
    qsizetype count = 0;
    for (double rate : steps.samplesPerSecond) {
        if (std::isfinite(rate) && rate > 0) {
            sum += rate;
            ++count;
        }
    }
    return count ? std::optional<double>(sum / double(count)) : std::nullopt;
}

std::optional<qint64> RunData::batchSize() const
{
    if (!config)
        return std::nullopt;
    return config->training.batchSize;
}

bool RunData::usesLossScaling() const
{
    if (config) {
        try {
            return LossScaler(config->lossScale, config->precision).kind() != LossScaler::Kind::None;
        } catch (const Error&) {
            // an invalid spec: judge by the rows below
        }
    }
    return info.summary.finalLossScale.value_or(1.0) != 1.0 || skippedStepCount() > 0;
}

QString RunData::finalLossScaleText() const
{
    return usesLossScaling() ? formatScale(info.summary.finalLossScale) : QStringLiteral("none");
}

QString RunData::precision() const
{
    if (!info.precision.isEmpty())
        return info.precision;
    return config ? QString::fromStdString(precisionModeName(config->precision)) : QString();
}

QString ReportData::title() const
{
    if (advice) // its runs are the verification's, often dozens
        return QStringLiteral("%1 in %2").arg(advice->subject, advice->formats.join(QStringLiteral(", ")));
    QStringList names;
    for (const RunData& run : runs)
        names << run.info.name;
    return names.join(QStringLiteral(" vs "));
}

ReportData loadReportData(const RunStore& store, const QList<qint64>& runIds, std::optional<qint64> baselineId)
{
    ReportData data;
    QList<qint64> ids;
    if (baselineId && !runIds.contains(*baselineId))
        ids << *baselineId;
    for (qint64 id : runIds) {
        if (!ids.contains(id)) // naming a run twice shows it once
            ids << id;
    }
    for (qint64 id : ids)
        data.runs << loadRun(store, id);
    if (baselineId)
        data.baseline = int(ids.indexOf(*baselineId));
    assignLabels(data.runs);
    data.seeds = seedStatistics(store, data.runs);
    data.machine = localMachineInfo();
    data.generatedAt = QDateTime::currentDateTimeUtc();
    data.databasePath = store.path();
    data.mantissaVersion = QString::fromStdString(mantissa::buildIdentity());
    return data;
}

} // namespace mantissa::report
