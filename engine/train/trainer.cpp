#include "engine/train/trainer.h"

#include "engine/distributed/data_parallel.h"

#include "engine/data/batch_loader.h"
#include "engine/distributed/data_parallel.h"
#include "engine/model/task_loss.h"
#include "engine/util/check.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

namespace mantissa {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Consecutive skipped steps after which a run is declared diverged: the scaler has had
// every chance to recover by then (16 halvings take 2^16 down to 1).
constexpr int kMaxConsecutiveSkips = 64;

} // namespace

Trainer::Trainer(const RunConfig& config, Backend& backend, const DatasetSplits& data, DataParallel* ranks)
    : m_config(config), m_backend(backend), m_data(data), m_ranks(ranks),
      m_optimizer(config.optimizer, config.update, config.training.seed),
      m_schedule(config.schedule, config.optimizer.lr), m_scaler(config.lossScale, config.precision)
{
    if (data.train.size() == 0)
        throw DataError(data.train.name + ": the training set is empty");
    if (Shape(config.model.input) != data.train.sampleShape)
        throw ConfigError("model.input is " + Shape(config.model.input).toString() + " but " + data.train.name +
                          " holds samples of " + data.train.sampleShape.toString());
    if (data.task == DataTask::Regression && config.model.classes != data.train.labelSize())
        throw ConfigError("model.classes is " + std::to_string(config.model.classes) + " but " + data.train.name +
                          " has " + std::to_string(data.train.labelSize()) +
                          " regression targets a sample; set model.classes (the model's outputs) to " +
                          std::to_string(data.train.labelSize()));
    if (config.model.classes < data.train.classes)
        throw ConfigError("model.classes is " + std::to_string(config.model.classes) + " but " + data.train.name +
                          " has " + std::to_string(data.train.classes) + " classes");
    if (config.training.batchSize > data.train.size())
        throw ConfigError("training.batch_size " + std::to_string(config.training.batchSize) + " is larger than " +
                          data.train.name + " (" + std::to_string(data.train.size()) + " samples)");
    if (ranks && ranks->batchNormSums() && !backend.supports(Op::BatchNormAcrossRanks, DType::F32))
        throw UnsupportedError("distributed.batch_norm synchronised runs on the CPU only: " + backend.name() +
                               " computes a batch's statistics in one launch and cannot sum them across ranks "
                               "mid-way yet (set distributed.batch_norm to per-rank, or training.device to cpu)");
    m_model = std::make_unique<Model>(config.model, config.precision, backend, config.training.seed, config.recipe,
                                      config.update);
    m_params = m_model->parametersInBackwardOrder();
    if (config.numerics.shadowEvery > 0) {
        if (ranks && ranks->batchNormSums())
            throw ConfigError("numerics.shadow_every cannot shadow a run whose batch norm is synchronised across "
                              "ranks (distributed.batch_norm synchronised): the fp32 pass of each rank sees only "
                              "its own slice; set distributed.batch_norm to per-rank or numerics.shadow_every to 0");
        m_shadow = std::make_unique<ShadowModel>(config.model, backend, config.training.seed);
    }
    m_optimizer.attach(backend, m_params);
    m_scalars.inputs = backend.empty({kStepInputCount}, DType::F32);
    m_scalars.state = backend.empty({kStepStateCount}, DType::F32);
    m_graphStatus = graphIneligibility();
    m_runAhead = runAheadWanted();
    // Every step copies the batch-norm statistics first: a skipped step puts them back on the
    // device, and a step held behind a skipped one while running ahead is undone from them.
    for (auto& [name, buffer] : m_model->buffers())
        m_bufferSnapshots.emplace_back(buffer, backend.empty(buffer->shape(), buffer->dtype()));
    m_stepsPerEpoch = data.train.size() / config.training.batchSize;
    m_totalSteps = m_stepsPerEpoch * std::max(config.training.epochs, 1);
    if (config.training.maxSteps > 0)
        m_totalSteps = std::min(m_totalSteps, config.training.maxSteps);
    if (!config.training.initFrom.empty()) {
        try {
            loadCheckpoint(config.training.initFrom, true); // weights only: a fine-tune's optimizer starts fresh
        } catch (const IoError& e) {
            throw IoError(std::string("training.init_from: ") + e.what());
        }
    }
}

Trainer::~Trainer() = default;

std::string Trainer::describeBufferSpread()
{
    std::vector<Tensor*> buffers;
    for (auto& [name, buffer] : m_model->buffers())
        buffers.push_back(buffer);
    if (buffers.empty())
        return {};
    const double spread = m_ranks->buffersSpread(m_backend, buffers);
    if (spread == 0)
        return "; batch-norm running statistics identical on every rank";
    char figure[32];
    std::snprintf(figure, sizeof figure, "%.2g", spread);
    return std::string("; batch-norm running statistics differ across ranks by up to ") + figure +
           " relative (distributed.batch_norm " + std::string(enumKey(m_config.distributed.batchNorm)) +
           "; rank 0's are the ones saved)";
}

std::int64_t Trainer::globalSamples(const QueuedStep& queued) const
{
    return queued.batch.size * (m_ranks ? m_ranks->worldSize() : 1);
}

void Trainer::publish(const EventRecord& event)
{
    for (auto* o : m_observers)
        o->onEvent(event);
}

void Trainer::restoreScalerState(const LossScalerState& state)
{
    m_scaler.restore(state);
    uploadScalerState();
}

bool Trainer::isNumericsStep(std::int64_t step) const
{
    const int every = m_config.numerics.every;
    return every > 0 && step % every == 0;
}

bool Trainer::isShadowStep(std::int64_t step) const
{
    const int every = m_config.numerics.shadowEvery;
    return m_shadow && every > 0 && step % every == 0;
}

ProbeSettings Trainer::probeSettings(float scale, bool scaledGradients) const
{
    ProbeSettings settings;
    settings.runTarget = PrecisionPolicy(m_config.precision).lensTarget();
    settings.lossScale = scale;
    settings.scaledGradients = scaledGradients;
    return settings;
}

std::optional<OverflowLocation> Trainer::locateOverflow(const Tensor& x, const Tensor& y, std::int64_t step,
                                                        float scale)
{
    // A training forward updates batch-norm running statistics: keep them as they were.
    std::vector<std::pair<Tensor*, Tensor>> saved;
    for (auto& [name, buffer] : m_model->buffers()) {
        Tensor copy = m_backend.empty(buffer->shape(), buffer->dtype());
        m_backend.cast(*buffer, copy);
        saved.emplace_back(buffer, copy);
    }
    // Scaled: the largest finite magnitude is reported as the tensor held it.
    NumericsProbe probe(*m_model, m_backend, probeSettings(scale, true));
    PassState pass{m_backend, true, m_config.training.seed, static_cast<std::uint64_t>(step)};
    pass.tap = &probe;
    ModelForward forward = m_model->forward(pass, x);
    Tensor dlogits = m_backend.empty(forward.logits.shape(), forward.logits.dtype());
    const LossResult loss = taskLoss(m_backend, m_data.task, forward.logits, y, scale, &dlogits);
    const bool forwardFailed = !std::isfinite(loss.meanLoss);
    if (!forwardFailed) {
        probe.measureLossGradient(dlogits);
        m_model->backward(pass, dlogits, forward);
    }
    for (auto& [buffer, copy] : saved)
        m_backend.cast(copy, *buffer);
    return probe.locateOverflow(forwardFailed);
}

Evaluation Trainer::evaluate(const Dataset& data)
{
    Evaluation result;
    if (data.size() == 0)
        return result;
    BatchLoader loader(data,
                       BatchLoaderOptions::evaluation(std::max<std::int64_t>(1, m_config.training.evalBatchSize)));
    loader.startEpoch(0);
    HostBatch batch;
    double lossSum = 0;
    std::int64_t correct = 0;
    PassState pass{m_backend, false, m_config.training.seed, 0};
    while (loader.next(batch)) {
        Tensor x = m_backend.empty(batch.inputShape, DType::F32);
        m_backend.upload(batch.inputs.data(), x);
        Tensor y = m_backend.empty({batch.size * labelsPerSample()}, DType::F32);
        m_backend.upload(batch.labels.data(), y);
        ModelForward forward = m_model->forward(pass, x);
        const LossResult r = taskLoss(m_backend, m_data.task, forward.logits, y, 1.0f, nullptr);
        lossSum += static_cast<double>(r.meanLoss) * static_cast<double>(batch.size);
        correct += r.correct;
        result.samples += batch.size;
    }
    result.loss = static_cast<float>(lossSum / static_cast<double>(result.samples));
    // Accuracy counts predictions: tokens for a sequence model. Regression has none: its
    // metric, the RMSE, is the square root of the mean squared error (engine/observe/task_metric.h).
    result.accuracy = regression() ? NAN
                                   : static_cast<float>(static_cast<double>(correct) /
                                                        static_cast<double>(result.samples * labelsPerSample()));
    return result;
}

// What one call of run() carries from step to step and epoch to epoch.
struct Trainer::RunState {
    RunSummary summary;
    Clock::time_point start = Clock::now();
    double trainSeconds = 0; // steps only, evaluations and pauses excluded
    std::int64_t trainedSamples = 0;
    HostBatch batch;                // the next batch; a finished step's buffers serve it
    std::int64_t lastQueued = 0;    // the last step queued
    std::int64_t lastPublished = 0; // the last step whose record was published
    int consecutiveSkips = 0;
    // Over the current epoch's finite steps.
    double epochLoss = 0;
    std::int64_t epochCorrect = 0, epochSamples = 0, finiteSteps = 0;
    // A step's time is from the previous record read (or the loop's start, or the end of a
    // pause or an evaluation) to its own: running ahead, steps overlap, and this still sums
    // to the training time.
    Clock::time_point lastRecord = Clock::now();
    std::optional<QueuedStep> pending; // queued, its record not read yet
    std::string divergence;            // set when a published step ends the run
    int epoch = 1;                     // the epoch being trained
    std::int64_t lastStatePoint = 0;   // the last step offered as a state point (or resumed from)

    float epochTrainLoss() const
    {
        return finiteSteps ? static_cast<float>(epochLoss / static_cast<double>(finiteSteps)) : NAN;
    }
};

RunSummary Trainer::run()
{
    RunState run;
    const TrainingPosition start = m_resumeAt.value_or(TrainingPosition{});
    run.lastQueued = run.lastPublished = run.lastStatePoint = start.step;
    run.consecutiveSkips = start.consecutiveSkips;
    m_position = start;
    if (regression()) // no accuracy to report: NaN is "not known" to every reader
        run.summary.testAccuracy = run.summary.bestTestAccuracy = NAN;
    BatchLoader loader(m_data.train, BatchLoaderOptions::training(m_config.training.batchSize, m_config.training.seed,
                                                                  augmentationOf(m_config.data)));
    const int epochs = std::max(m_config.training.epochs, 1);
    m_backend.resetPeakBytes();
    uploadScalerState(); // a checkpoint may have restored the scaler since the last run
    run.lastRecord = Clock::now();
    try {
        for (int epoch = start.epoch; epoch <= epochs && run.lastQueued < m_totalSteps; ++epoch) {
            TrainingPosition from = start;
            if (epoch != start.epoch)
                from = TrainingPosition{.step = run.lastQueued, .epoch = epoch};
            if (std::optional<RunEnd> end = trainEpoch(run, loader, from))
                return conclude(run, *end);
            evaluateEpoch(run, epoch);
        }
    } catch (const std::exception& e) {
        return conclude(run, {RunStatus::Failed, reportFailure(run, e)});
    }
    return conclude(run, {RunStatus::Finished, ""});
}

std::optional<Trainer::RunEnd> Trainer::trainEpoch(RunState& run, BatchLoader& loader, const TrainingPosition& start)
{
    const int epoch = start.epoch;
    run.epoch = epoch;
    loader.startEpoch(epoch);
    loader.seek(start.batchIndex);
    run.epochLoss = start.epochLoss;
    run.epochCorrect = start.epochCorrect;
    run.epochSamples = start.epochSamples;
    run.finiteSteps = start.finiteSteps;
    const auto diverged = [&run]() { return RunEnd{RunStatus::Diverged, run.divergence}; };
    const std::int64_t every = m_config.training.saveStateEvery;
    while (run.lastQueued < m_totalSteps) {
        if (every > 0 && run.lastQueued > run.lastStatePoint && run.lastQueued % every == 0) {
            offerStatePoint(run, loader);
            if (!run.divergence.empty())
                return diverged();
        }
        if (!loader.next(run.batch))
            break;
        // Every rank draws the same global batch (same seed, same order) and keeps its slice.
        if (m_ranks)
            m_ranks->takeSlice(run.batch);
        if (m_paused || stopNow()) {
            drain(run);
            if (!run.divergence.empty())
                return diverged();
            while (m_paused && !m_stopRequested)
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            run.lastRecord = Clock::now();
        }
        if (stopNow())
            return RunEnd{RunStatus::Stopped, "stopped by the user at step " + std::to_string(run.lastPublished)};
        ++run.lastQueued;
        // Sampled steps read their tensors on the host as they go: nothing runs beside them.
        if (isObservedStep(run.lastQueued))
            drain(run);
        if (!run.divergence.empty())
            return diverged();
        queueNextStep(run, epoch);
        if (!run.divergence.empty())
            return diverged();
    }
    drain(run);
    if (!run.divergence.empty())
        return diverged();
    return std::nullopt;
}

void Trainer::offerStatePoint(RunState& run, const BatchLoader& loader)
{
    drain(run);
    run.lastStatePoint = run.lastQueued;
    if (!run.divergence.empty())
        return;
    m_position = {run.lastQueued,   run.epoch,        loader.position(), run.epochLoss,
                  run.epochCorrect, run.epochSamples, run.finiteSteps,   run.consecutiveSkips};
    for (auto* o : m_observers)
        o->onStatePoint(run.lastQueued);
}

void Trainer::queueNextStep(RunState& run, int epoch)
{
    QueuedStep current = queueTrainStep(std::move(run.batch), run.lastQueued, epoch, run.pending.has_value());
    if (run.pending) {
        StepOutcome outcome = finishStep(*run.pending, true);
        publishStep(run, *run.pending, outcome);
        run.batch = std::move(run.pending->batch); // its buffers serve the next batch
        run.pending.reset();
        // The step ahead was held if this one was skipped (and is dropped if the run ends).
        if (!run.divergence.empty())
            return;
        if (outcome.skipped)
            current = requeue(std::move(current));
    }
    run.pending = std::move(current);
    if (!m_runAhead || run.pending->probe || run.pending->shadow)
        drain(run);
}

void Trainer::drain(RunState& run)
{
    if (!run.pending)
        return;
    StepOutcome outcome = finishStep(*run.pending, false);
    publishStep(run, *run.pending, outcome);
    run.pending.reset();
}

void Trainer::publishStep(RunState& run, const QueuedStep& queued, StepOutcome& outcome)
{
    const auto now = Clock::now();
    const double stepSeconds = std::chrono::duration<double>(now - run.lastRecord).count();
    run.lastRecord = now;
    run.trainSeconds += stepSeconds;
    run.trainedSamples += globalSamples(queued);
    run.lastPublished = queued.step;
    publishStepRecord(run, queued, outcome, stepSeconds);
    if (outcome.skipped) {
        ++run.summary.skippedSteps;
        ++run.consecutiveSkips;
        publishOverflow(queued.step, outcome);
    } else {
        run.consecutiveSkips = 0;
        run.epochLoss += outcome.loss;
        run.epochCorrect += outcome.correct;
        run.epochSamples += globalSamples(queued) * labelsPerSample(); // predictions, for the accuracy
        ++run.finiteSteps;
    }
    const ScaleUpdate update = outcome.scaleUpdate;
    if (update.changed()) {
        EventRecord change;
        change.kind = EventKind::ScaleChange;
        change.step = queued.step;
        change.scaleBefore = update.before;
        change.scaleAfter = update.after;
        publish(change);
    }
    checkDivergence(run, queued.step, outcome);
}

void Trainer::publishStepRecord(const RunState& run, const QueuedStep& queued, const StepOutcome& outcome,
                                double stepSeconds)
{
    StepRecord record;
    record.step = queued.step;
    record.epoch = queued.epoch;
    record.loss = outcome.loss;
    record.learningRate = m_schedule.rate(queued.step - 1, queued.epoch - 1, m_stepsPerEpoch, m_totalSteps);
    record.lossScale = outcome.scaleUpdate.before;
    record.skipped = outcome.skipped;
    record.gradNorm = outcome.gradNorm;
    record.samplesPerSecond = static_cast<float>(static_cast<double>(globalSamples(queued)) / stepSeconds);
    record.elapsedSeconds = run.trainSeconds;
    record.gradAmax = outcome.gradAmax;
    record.allReduceFlushed = outcome.allReduceFlushed;
    record.allReduceOverflowed = outcome.allReduceOverflowed;
    for (auto* o : m_observers)
        o->onStep(record);
    if (outcome.numerics)
        for (auto* o : m_observers)
            o->onNumerics(*outcome.numerics);
    if (outcome.shadow)
        for (auto* o : m_observers)
            o->onShadow(*outcome.shadow);
}

void Trainer::publishOverflow(std::int64_t step, StepOutcome& outcome)
{
    EventRecord overflow;
    overflow.kind = EventKind::Overflow;
    overflow.step = step;
    overflow.scaleBefore = outcome.scaleUpdate.before;
    overflow.scaleAfter = outcome.scaleUpdate.after;
    overflow.parameter = outcome.firstNonFinite;
    overflow.message = outcome.overflowRanks;
    overflow.firstRank = outcome.firstRank;
    overflow.location = std::move(outcome.location);
    publish(overflow);
}

void Trainer::checkDivergence(RunState& run, std::int64_t step, const StepOutcome& outcome)
{
    const bool fp32Diverged = !outcome.lossFinite && m_config.precision == PrecisionMode::Fp32;
    if (!fp32Diverged && run.consecutiveSkips < kMaxConsecutiveSkips)
        return;
    run.divergence =
        fp32Diverged
            ? "the loss became non-finite at step " + std::to_string(step) + " in fp32; lower the learning rate"
            : std::to_string(run.consecutiveSkips) + " consecutive steps had non-finite gradients (last at " +
                  outcome.firstNonFinite + ")" +
                  (m_scaler.kind() == LossScaler::Kind::Dynamic ? "; the loss scale cannot recover"
                                                                : "; try mixed precision or dynamic loss scaling");
    EventRecord event;
    event.kind = EventKind::Divergence;
    event.step = step;
    event.message = run.divergence;
    publish(event);
}

void Trainer::evaluateEpoch(RunState& run, int epoch)
{
    const Evaluation test = evaluate(m_data.test);
    run.lastRecord = Clock::now();
    EpochRecord record;
    record.epoch = epoch;
    record.trainLoss = run.epochTrainLoss();
    record.trainAccuracy =
        regression() ? NAN
        : run.epochSamples
            ? static_cast<float>(static_cast<double>(run.epochCorrect) / static_cast<double>(run.epochSamples))
            : 0.0f;
    record.testLoss = test.loss;
    record.testAccuracy = test.accuracy;
    if (m_data.validation.size() > 0) {
        const Evaluation validation = evaluate(m_data.validation);
        record.validationLoss = validation.loss;
        record.validationAccuracy = validation.accuracy;
    }
    record.wallSeconds = secondsSince(run.start);
    // The epoch is done and evaluated: a checkpoint saved now resumes at the next one's start.
    m_position = {.step = run.lastPublished, .epoch = epoch + 1, .consecutiveSkips = run.consecutiveSkips};
    for (auto* o : m_observers)
        o->onEpoch(record);
    RunSummary& summary = run.summary;
    summary.epochs = epoch;
    summary.trainLoss = record.trainLoss;
    summary.testLoss = test.loss;
    summary.testAccuracy = test.accuracy;
    summary.bestTestAccuracy = regression() ? NAN : std::max(summary.bestTestAccuracy, test.accuracy);
    if (!(summary.bestTestLoss <= test.loss)) // also the first epoch's, and a finite loss after a NaN one
        summary.bestTestLoss = test.loss;
}

std::string Trainer::reportFailure(const RunState& run, const std::exception& e)
{
    std::string why = e.what();
    // Out of memory: the batch size is the knob a user turns, so the message names it.
    if (dynamic_cast<const ResourceError*>(&e))
        why += " (batch size " + std::to_string(m_config.training.batchSize) + ", " +
               precisionModeName(m_config.precision) + "; try a smaller batch size)";
    EventRecord error;
    error.kind = EventKind::Error;
    error.step = run.lastQueued;
    error.message = why;
    publish(error);
    return why;
}

RunSummary Trainer::conclude(RunState& run, const RunEnd& end)
{
    RunSummary& summary = run.summary;
    // A run cut short still reports what its weights are worth now.
    if (end.status != RunStatus::Finished && end.status != RunStatus::Failed && summary.epochs == 0) {
        const Evaluation test = evaluate(m_data.test);
        summary.testLoss = test.loss;
        summary.testAccuracy = test.accuracy;
        summary.trainLoss = run.epochTrainLoss();
    }
    summary.steps = run.lastPublished;
    // Stopped mid-epoch: the end-of-run checkpoint resumes within it (the first step not taken).
    if (m_position.step != run.lastPublished)
        m_position = {run.lastPublished,
                      run.epoch,
                      run.lastPublished - static_cast<std::int64_t>(run.epoch - 1) * m_stepsPerEpoch,
                      run.epochLoss,
                      run.epochCorrect,
                      run.epochSamples,
                      run.finiteSteps,
                      run.consecutiveSkips};
    summary.trainSeconds = run.trainSeconds;
    summary.samplesPerSecond = run.trainSeconds > 0 ? static_cast<double>(run.trainedSamples) / run.trainSeconds : 0;
    summary.wallSeconds = secondsSince(run.start);
    summary.status = end.status;
    summary.message = end.message;
    summary.finalLossScale = m_scaler.scale();
    summary.peakBytes = m_backend.peakBytes();
    EventRecord finished;
    finished.kind = EventKind::Finished;
    finished.step = summary.steps;
    finished.message = runStatusName(end.status);
    if (!end.message.empty())
        finished.message += ": " + end.message;
    // Every rank gathers its throughput to the record (not after a failure: a rank may be gone).
    if (m_ranks && end.status != RunStatus::Failed) {
        const AllReduceCounts& counts = m_ranks->counts();
        summary.ranks = m_ranks->gatherRankThroughput(run.trainSeconds, run.trainedSamples);
        finished.message += "; " + m_ranks->describeRankThroughput(summary.ranks) + describeBufferSpread();
        if (m_config.distributed.allReduceType == AllReduceType::Compute)
            finished.message += "; 16-bit all-reduce: " + std::to_string(counts.flushedByDivision) +
                                " values flushed to zero by the division before the sum, " +
                                std::to_string(counts.overflowedInSum) + " overflowed in the sum";
        finished.message += "; " + std::to_string(counts.stepsSkippedByOneRank) +
                            " steps skipped on every rank for non-finite values on only some";
    }
    publish(finished);
    return summary;
}

} // namespace mantissa
