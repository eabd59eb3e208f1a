#include "ui/stored_run.h"

#include "storage/run_store.h"

#include <cmath>
#include <cstdint>
#include <optional>

namespace mantissa::ui {

namespace {

// A count column as the store reads it: NaN where the row has none.
std::optional<std::int64_t> storedCount(double value)
{
    return std::isnan(value) ? std::nullopt : std::optional(static_cast<std::int64_t>(value));
}

std::vector<StepRecord> stepRecords(const storage::StepSeries& s)
{
    std::vector<StepRecord> steps(static_cast<std::size_t>(s.size()));
    for (qsizetype i = 0; i < s.size(); ++i) {
        StepRecord& r = steps[static_cast<std::size_t>(i)];
        r.step = static_cast<std::int64_t>(s.step[i]);
        r.epoch = static_cast<int>(s.epoch[i]);
        r.loss = static_cast<float>(s.loss[i]);
        r.learningRate = static_cast<float>(s.learningRate[i]);
        r.lossScale = static_cast<float>(s.lossScale[i]);
        r.skipped = s.skipped[i];
        r.gradNorm = static_cast<float>(s.gradNorm[i]);
        r.samplesPerSecond = static_cast<float>(s.samplesPerSecond[i]);
        r.elapsedSeconds = s.elapsedSeconds[i];
        r.allReduceFlushed = storedCount(s.allReduceFlushed[i]);
        r.allReduceOverflowed = storedCount(s.allReduceOverflowed[i]);
    }
    return steps;
}

// The stored summary lacks the engine's training time; the last step's clock is exactly it.
RunSummary engineSummary(const storage::RunInfo& info, const storage::StepSeries& steps, int epochs)
{
    RunSummary s;
    s.status = info.status;
    s.epochs = epochs; // with none, the evaluation fields are placeholders (run_summary.h)
    s.message = info.errorMessage.toStdString();
    s.trainLoss = static_cast<float>(info.summary.finalTrainLoss.value_or(NAN));
    s.testAccuracy = static_cast<float>(info.summary.finalTestAccuracy.value_or(0));
    s.bestTestAccuracy = static_cast<float>(info.summary.bestTestAccuracy.value_or(0));
    s.steps = info.summary.steps.value_or(steps.size());
    s.skippedSteps = info.summary.skippedSteps.value_or(0);
    s.finalLossScale = static_cast<float>(info.summary.finalLossScale.value_or(1));
    s.samplesPerSecond = info.summary.samplesPerSecond.value_or(0);
    s.trainSeconds = steps.isEmpty() ? 0 : steps.elapsedSeconds.last();
    s.wallSeconds = info.wallSeconds.value_or(0);
    s.peakBytes = static_cast<std::size_t>(info.peakMemoryBytes.value_or(0));
    return s;
}

ForkLineage forkLineage(const storage::RunStore& store, const storage::RunLineage& parent)
{
    ForkLineage lineage;
    lineage.step = static_cast<double>(parent.step);
    if (!parent.runId)
        return lineage;
    lineage.parentRunId = *parent.runId;
    lineage.parentName = store.run(*parent.runId).name;
    const storage::StepSeries steps = store.steps(*parent.runId);
    for (qsizetype i = 0; i < steps.size() && steps.step[i] <= lineage.step; ++i) {
        lineage.leadStep << steps.step[i];
        lineage.leadLoss << steps.loss[i];
    }
    return lineage;
}

} // namespace

std::shared_ptr<RunRecording> loadStoredRun(const storage::RunStore& store, qint64 runId)
{
    const storage::RunInfo info = store.run(runId);
    auto recording = std::make_shared<RunRecording>();
    recording->runId = runId;
    recording->name = info.name;
    recording->kernels = info.kernels;
    recording->dataFingerprint = info.dataFingerprint;
    recording->config = parseRunConfig(info.configJson.toStdString(), "run " + info.name.toStdString());
    if (info.parent)
        recording->fork = forkLineage(store, *info.parent);

    const storage::StepSeries series = store.steps(runId);
    RecordBatch batch;
    batch.steps = stepRecords(series);
    for (const EpochRecord& e : store.epochs(runId))
        batch.epochs.push_back(e);
    for (const EventRecord& e : store.events(runId))
        batch.events.push_back(e);
    if (info.status != RunStatus::Running) {
        batch.ended = engineSummary(info, series, int(batch.epochs.size()));
        const QList<RankThroughput> ranks = store.rankThroughput(runId);
        batch.ended->ranks.assign(ranks.begin(), ranks.end());
    }
    recording->append(batch);
    return recording;
}

} // namespace mantissa::ui
