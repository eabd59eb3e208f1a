#include "engine/train/trainer.h"

#include "engine/data/batch_loader.h"
#include "engine/util/check.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <thread>

namespace mantissa {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// Consecutive skipped steps after which a run is declared diverged: the scaler has had
// every chance to recover by then (16 halvings take 2^16 down to 1).
constexpr int kMaxConsecutiveSkips = 64;

} // namespace

Trainer::Trainer(const RunConfig& config, Backend& backend, const DatasetSplits& data)
    : m_config(config),
      m_backend(backend),
      m_data(data),
      m_optimizer(config.optimizer),
      m_schedule(config.schedule, config.optimizer.lr),
      m_scaler(config.lossScale, config.precision)
{
    if (data.train.size() == 0)
        throw DataError(data.train.name + ": the training set is empty");
    if (Shape(config.model.input) != data.train.sampleShape)
        throw ConfigError("model.input is " + Shape(config.model.input).toString() + " but " + data.train.name +
                          " holds samples of " + data.train.sampleShape.toString());
    if (config.model.classes < data.train.classes)
        throw ConfigError("model.classes is " + std::to_string(config.model.classes) + " but " + data.train.name +
                          " has " + std::to_string(data.train.classes) + " classes");
    if (config.training.batchSize > data.train.size())
        throw ConfigError("training.batch_size " + std::to_string(config.training.batchSize) + " is larger than " +
                          data.train.name + " (" + std::to_string(data.train.size()) + " samples)");
    m_model = std::make_unique<Model>(config.model, config.precision, backend, config.training.seed);
    m_params = m_model->parametersInBackwardOrder();
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

ProbeSettings Trainer::probeSettings(float scale, bool scaledGradients) const
{
    ProbeSettings settings;
    settings.runTarget = PrecisionPolicy(m_config.precision).lensTarget();
    settings.lossScale = scale;
    settings.scaledGradients = scaledGradients;
    return settings;
}

std::optional<OverflowLocation> Trainer::locateOverflow(const Tensor& x, const Tensor& y, std::int64_t step, float scale)
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
    const LossResult loss = m_backend.softmaxCrossEntropy(forward.logits, y, scale, &dlogits);
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
    BatchLoader loader(data, BatchLoaderOptions::evaluation(std::max<std::int64_t>(1, m_config.training.evalBatchSize)));
    loader.startEpoch(0);
    HostBatch batch;
    double lossSum = 0;
    std::int64_t correct = 0;
    PassState pass{m_backend, false, m_config.training.seed, 0};
    while (loader.next(batch)) {
        Tensor x = m_backend.empty(batch.inputShape, DType::F32);
        m_backend.upload(batch.inputs.data(), x);
        Tensor y = m_backend.empty({batch.size}, DType::F32);
        m_backend.upload(batch.labels.data(), y);
        ModelForward forward = m_model->forward(pass, x);
        const LossResult r = m_backend.softmaxCrossEntropy(forward.logits, y, 1.0f, nullptr);
        lossSum += static_cast<double>(r.meanLoss) * static_cast<double>(batch.size);
        correct += r.correct;
        result.samples += batch.size;
    }
    result.loss = static_cast<float>(lossSum / static_cast<double>(result.samples));
    result.accuracy = static_cast<float>(static_cast<double>(correct) / static_cast<double>(result.samples));
    return result;
}

void Trainer::finishRun(RunSummary& summary, RunStatus status, const std::string& message)
{
    summary.status = status;
    summary.message = message;
    summary.finalLossScale = m_scaler.scale();
    summary.peakBytes = m_backend.peakBytes();
    EventRecord finished;
    finished.kind = EventKind::Finished;
    finished.step = summary.steps;
    finished.message = runStatusName(status);
    if (!message.empty())
        finished.message += ": " + message;
    publish(finished);
}

RunSummary Trainer::run()
{
    RunSummary summary;
    const auto runStart = Clock::now();
    double trainSeconds = 0;
    std::int64_t trainedSamples = 0;
    const std::int64_t batchSize = m_config.training.batchSize;
    BatchLoader loader(m_data.train, BatchLoaderOptions::training(batchSize, m_config.training.seed));
    HostBatch batch;
    std::int64_t step = m_stepOffset;      // the last step queued
    std::int64_t finished = m_stepOffset;  // the last step whose record was published
    int consecutiveSkips = 0;
    const int epochs = std::max(m_config.training.epochs, 1);
    m_backend.resetPeakBytes();
    uploadScalerState(); // a checkpoint may have restored the scaler since the last run
    double epochLoss = 0; // over the current epoch's finite steps
    std::int64_t epochCorrect = 0, epochSamples = 0, finiteSteps = 0;
    // A step's time is from the previous record read (or the loop's start, or the end of a
    // pause or an evaluation) to its own: running ahead, steps overlap, and this still sums
    // to the training time.
    auto lastRecord = Clock::now();
    std::optional<QueuedStep> pending;
    std::string divergence;

    auto conclude = [&](RunStatus status, const std::string& message) {
        // A run cut short still reports what its weights are worth now.
        if (status != RunStatus::Finished && status != RunStatus::Failed && summary.epochs == 0) {
            const Evaluation test = evaluate(m_data.test);
            summary.testLoss = test.loss;
            summary.testAccuracy = test.accuracy;
            summary.trainLoss = finiteSteps ? static_cast<float>(epochLoss / static_cast<double>(finiteSteps)) : NAN;
        }
        summary.steps = finished;
        summary.trainSeconds = trainSeconds;
        summary.samplesPerSecond = trainSeconds > 0 ? static_cast<double>(trainedSamples) / trainSeconds : 0;
        summary.wallSeconds = secondsSince(runStart);
        finishRun(summary, status, message);
        return summary;
    };

    // Publishes a finished step's record and events; sets `divergence` when the run must end.
    auto publishStep = [&](const QueuedStep& q, StepOutcome& outcome) {
        const auto now = Clock::now();
        const double stepSeconds = std::chrono::duration<double>(now - lastRecord).count();
        lastRecord = now;
        trainSeconds += stepSeconds;
        trainedSamples += q.batch.size;
        finished = q.step;
        const ScaleUpdate update = outcome.scaleUpdate;

        StepRecord record;
        record.step = q.step;
        record.epoch = q.epoch;
        record.loss = outcome.loss;
        record.learningRate = m_schedule.rate(q.step - 1, q.epoch - 1, m_stepsPerEpoch, m_totalSteps);
        record.lossScale = update.before;
        record.skipped = outcome.skipped;
        record.gradNorm = outcome.gradNorm;
        record.samplesPerSecond = static_cast<float>(static_cast<double>(q.batch.size) / stepSeconds);
        record.elapsedSeconds = trainSeconds;
        record.gradAmax = outcome.gradAmax;
        for (auto* o : m_observers)
            o->onStep(record);
        if (outcome.numerics)
            for (auto* o : m_observers)
                o->onNumerics(*outcome.numerics);

        if (outcome.skipped) {
            ++summary.skippedSteps;
            ++consecutiveSkips;
            EventRecord overflow;
            overflow.kind = EventKind::Overflow;
            overflow.step = q.step;
            overflow.scaleBefore = update.before;
            overflow.scaleAfter = update.after;
            overflow.parameter = outcome.firstNonFinite;
            overflow.location = std::move(outcome.location);
            publish(overflow);
        } else {
            consecutiveSkips = 0;
            epochLoss += outcome.loss;
            epochCorrect += outcome.correct;
            epochSamples += q.batch.size;
            ++finiteSteps;
        }
        if (update.changed()) {
            EventRecord change;
            change.kind = EventKind::ScaleChange;
            change.step = q.step;
            change.scaleBefore = update.before;
            change.scaleAfter = update.after;
            publish(change);
        }
        const bool fp32Diverged = !outcome.lossFinite && m_config.precision == PrecisionMode::Fp32;
        if (fp32Diverged || consecutiveSkips >= kMaxConsecutiveSkips) {
            divergence = fp32Diverged
                ? "the loss became non-finite at step " + std::to_string(q.step) + " in fp32; lower the learning rate"
                : std::to_string(consecutiveSkips) + " consecutive steps had non-finite gradients (last at " +
                      outcome.firstNonFinite + ")" +
                      (m_scaler.kind() == LossScaler::Kind::Dynamic ? "; the loss scale cannot recover"
                                                                    : "; try mixed precision or dynamic loss scaling");
            EventRecord event;
            event.kind = EventKind::Divergence;
            event.step = q.step;
            event.message = divergence;
            publish(event);
        }
    };
    // Reads and publishes the step in flight, if any, with nothing queued after it.
    auto drain = [&]() {
        if (!pending)
            return;
        StepOutcome outcome = finishStep(*pending, false);
        publishStep(*pending, outcome);
        pending.reset();
    };

    try {
        for (int epoch = 1; epoch <= epochs && step < m_totalSteps; ++epoch) {
            loader.startEpoch(epoch);
            epochLoss = 0;
            epochCorrect = 0;
            epochSamples = 0;
            finiteSteps = 0;
            while (step < m_totalSteps && loader.next(batch)) {
                if (m_paused || m_stopRequested) {
                    drain();
                    if (!divergence.empty())
                        return conclude(RunStatus::Diverged, divergence);
                    while (m_paused && !m_stopRequested)
                        std::this_thread::sleep_for(std::chrono::milliseconds(20));
                    lastRecord = Clock::now();
                }
                if (m_stopRequested)
                    return conclude(RunStatus::Stopped, "stopped by the user at step " + std::to_string(finished));
                ++step;
                // Sampled steps read their tensors on the host as they go: nothing runs beside them.
                if (isNumericsStep(step))
                    drain();
                if (!divergence.empty())
                    return conclude(RunStatus::Diverged, divergence);
                QueuedStep current = queueTrainStep(std::move(batch), step, epoch, pending.has_value());
                if (pending) {
                    StepOutcome outcome = finishStep(*pending, true);
                    publishStep(*pending, outcome);
                    batch = std::move(pending->batch); // its buffers serve the next batch
                    pending.reset();
                    // The step ahead was held if this one was skipped (and is dropped if the run ends).
                    if (!divergence.empty())
                        return conclude(RunStatus::Diverged, divergence);
                    if (outcome.skipped)
                        current = requeue(std::move(current));
                }
                pending = std::move(current);
                if (!m_runAhead || pending->probe)
                    drain();
            }
            drain();
            if (!divergence.empty())
                return conclude(RunStatus::Diverged, divergence);
            const Evaluation test = evaluate(m_data.test);
            lastRecord = Clock::now();
            EpochRecord record;
            record.epoch = epoch;
            record.trainLoss = finiteSteps ? static_cast<float>(epochLoss / static_cast<double>(finiteSteps)) : NAN;
            record.trainAccuracy = epochSamples ? static_cast<float>(static_cast<double>(epochCorrect) /
                                                                     static_cast<double>(epochSamples))
                                                : 0.0f;
            record.testLoss = test.loss;
            record.testAccuracy = test.accuracy;
            record.wallSeconds = secondsSince(runStart);
            for (auto* o : m_observers)
                o->onEpoch(record);
            summary.epochs = epoch;
            summary.trainLoss = record.trainLoss;
            summary.testLoss = test.loss;
            summary.testAccuracy = test.accuracy;
            summary.bestTestAccuracy = std::max(summary.bestTestAccuracy, test.accuracy);
        }
    } catch (const std::exception& e) {
        std::string why = e.what();
        // Out of memory: the batch size is the knob a user turns, so the message names it.
        if (dynamic_cast<const ResourceError*>(&e))
            why += " (batch size " + std::to_string(m_config.training.batchSize) + ", " +
                   precisionModeName(m_config.precision) + "; try a smaller batch size)";
        EventRecord error;
        error.kind = EventKind::Error;
        error.step = step;
        error.message = why;
        publish(error);
        return conclude(RunStatus::Failed, why);
    }
    return conclude(RunStatus::Finished, "");
}

} // namespace mantissa
