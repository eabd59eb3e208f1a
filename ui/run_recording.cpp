#include "ui/run_recording.h"

#include "engine/precision/precision_policy.h"

#include <QObject>

#include <algorithm>
#include <cmath>

namespace mantissa::ui {

QString recordingName(const RunConfig& config)
{
    const QString name = config.name.empty() ? QObject::tr("run") : QString::fromStdString(config.name);
    return name + " · " + QString::fromStdString(precisionModeName(config.precision));
}

void RunRecording::append(const RecordBatch& batch)
{
    if (batch.started) {
        start = batch.started;
        kernels = batch.started->kernels;
        dataFingerprint = batch.started->dataFingerprint;
        if (config.data.dataset == DatasetKind::Files)
            config.data.task = batch.started->task; // auto resolved: the run's metric follows
        if (batch.started->runId > 0) {
            runId = batch.started->runId;
            name = batch.started->runName;
        }
    }
    for (const StepRecord& r : batch.steps) {
        step.push_back(static_cast<double>(r.step));
        loss.push_back(r.loss);
        learningRate.push_back(r.learningRate);
        lossScale.push_back(r.lossScale);
        samplesPerSecond.push_back(r.samplesPerSecond);
        allReduceFlushed.push_back(r.allReduceFlushed ? static_cast<double>(*r.allReduceFlushed) : NAN);
        allReduceOverflowed.push_back(r.allReduceOverflowed ? static_cast<double>(*r.allReduceOverflowed) : NAN);
        m_lastStepOfEpoch[r.epoch] = static_cast<double>(r.step);
    }
    for (const EpochRecord& r : batch.epochs) {
        epoch.push_back(r.epoch);
        const auto last = m_lastStepOfEpoch.find(r.epoch);
        epochEndStep.push_back(last != m_lastStepOfEpoch.end() ? last->second : 0.0);
        trainLoss.push_back(r.trainLoss);
        trainAccuracy.push_back(r.trainAccuracy);
        testLoss.push_back(r.testLoss);
        testAccuracy.push_back(r.testAccuracy);
        validationLoss.push_back(r.validationLoss);
        validationAccuracy.push_back(r.validationAccuracy);
    }
    for (const EventRecord& e : batch.events) {
        if (e.kind == EventKind::Overflow)
            overflows.push_back(
                {static_cast<double>(e.step), e.scaleBefore, e.scaleAfter, QString::fromStdString(e.parameter),
                 e.location ? QString::fromStdString(e.location->layer) : QString(),
                 e.location
                     ? QString::fromStdString(describeNonFinite(e.location->nonFiniteCount, e.location->nanCount) +
                                              " in " + e.location->tensor)
                     : QString()});
    }
    if (batch.ended) {
        summary = batch.ended;
        failure = batch.failure;
    }
}

bool RunRecording::hasAllReduceCounts() const
{
    return std::any_of(allReduceFlushed.begin(), allReduceFlushed.end(), [](double v) { return !std::isnan(v); });
}

QString kernelPathLabel(PrecisionMode mode, const QString& kernels)
{
    const DType compute = PrecisionPolicy(mode).layer().compute();
    if (compute == DType::F32)
        return {};
    const std::string_view name = dtypeName(compute);
    const QString type = QString::fromLatin1(name.data(), static_cast<qsizetype>(name.size()));
    // Backend::kernelPaths writes one "<type>: native: ..." or "<type>: emulated: ..." line per type.
    for (const QString& line : kernels.split(u'\n')) {
        if (!line.startsWith(type + QStringLiteral(": ")))
            continue;
        const QString path = line.mid(type.size() + 2).section(u':', 0, 0).section(u' ', 0, 0);
        return path + u' ' + type;
    }
    return {};
}

} // namespace mantissa::ui
