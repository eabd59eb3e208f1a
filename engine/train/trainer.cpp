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

const char* runStatusName(RunStatus status)
{
    switch (status) {
    case RunStatus::Running: return "running";
    case RunStatus::Finished: return "finished";
    case RunStatus::Stopped: return "stopped";
    case RunStatus::Diverged: return "diverged";
    case RunStatus::Failed: return "failed";
    }
    return "?";
}

struct Trainer::StepOutcome {
    float loss = 0;
    std::int64_t correct = 0;
    bool skipped = false;
    bool lossFinite = true;
    float gradNorm = 0;
    float gradAmax = 0;
    std::string firstNonFinite;
    std::optional<OverflowLocation> location;  // skipped steps
    std::optional<NumericsRecord> numerics;    // sampled steps
    ScaleUpdate scaleUpdate;
};

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
    m_stepsPerEpoch = data.train.size() / config.training.batchSize;
    m_totalSteps = m_stepsPerEpoch * std::max(config.training.epochs, 1);
    if (config.training.maxSteps > 0)
        m_totalSteps = std::min(m_totalSteps, config.training.maxSteps);
}

Trainer::~Trainer() = default;

void Trainer::publish(const EventRecord& event)
{
    for (auto* o : m_observers)
        o->onEvent(event);
}

void Trainer::queueStep(Backend& backend, PassState& pass, NumericsProbe* probe)
{
    ModelForward forward = m_model->forward(pass, m_batchInputs);
    // dlogits is stored like the logits: in fp16 the scaled gradient is rounded here first.
    Tensor dlogits = backend.empty(forward.logits.shape(), forward.logits.dtype());
    backend.softmaxCrossEntropy(forward.logits, m_batchLabels, m_scalars, dlogits);
    if (probe) {
        probe->measureLossGradient(dlogits);
        GradientCapture capture(backend, m_params);
        m_model->backward(pass, dlogits, forward);
        capture.release();
    } else {
        m_model->backward(pass, dlogits, forward);
    }
    std::vector<const Tensor*> grads;
    std::vector<Tensor*> fp32Grads;
    for (Parameter* p : m_params) {
        grads.push_back(&p->grad);
        fp32Grads.push_back(&p->fp32Grad);
    }
    // From here on the device decides: a non-finite loss or gradient marks the step skipped,
    // and the clip, the optimizer and the loss-scale rule read that mark where they run.
    backend.unscaleAndCheckFinite(grads, fp32Grads, m_scalars);
    backend.clipGradNorm(fp32Grads, m_scalars, m_config.optimizer.gradClipNorm);
    m_optimizer.queueStep(backend, m_params, m_scalars);
    backend.updateLossScale(m_scalars, m_scaler.rule());
}

std::string Trainer::graphIneligibility() const
{
    if (m_config.training.graphs == "off")
        return "training.graphs is off";
    // A tape saves the CPU nothing (no launches) and holds every temporary of the step at
    // once, which would inflate the peak memory the run reports.
    if (m_config.training.graphs == "auto" && m_backend.device().kind == DeviceKind::Cpu)
        return "the CPU runs each op as it is called; training.graphs auto captures on GPUs only";
    const std::function<bool(const std::vector<LayerSpec>&)> hasDropout = [&](const std::vector<LayerSpec>& layers) {
        return std::any_of(layers.begin(), layers.end(),
                           [&](const LayerSpec& l) { return l.type == "dropout" || hasDropout(l.body); });
    };
    if (hasDropout(m_config.model.layers))
        return "the model has dropout, which draws a new mask every step";
    return {};
}

bool Trainer::runStepOnGraph(std::int64_t step)
{
    if (m_graph)
        return true;
    // The first step runs op by op: it finds the convolution algorithms and fills the caches
    // a capture must not fill. Capture is tried once per run.
    if (m_graphTried || m_eagerSteps < 1 || !m_graphStatus.empty())
        return false;
    m_graphTried = true;
    std::string why;
    m_graph = m_backend.captureGraph(
        [&](Backend& recorder) {
            PassState pass{recorder, true, m_config.training.seed, static_cast<std::uint64_t>(step)};
            queueStep(recorder, pass, nullptr);
        },
        &why);
    m_graphStatus = m_graph ? "captured at step " + std::to_string(step) : "capture failed: " + why;
    return static_cast<bool>(m_graph);
}

Trainer::StepOutcome Trainer::trainStep(const float* inputs, const float* labels, std::int64_t batch,
                                        std::int64_t step, int epoch)
{
    StepOutcome out;
    if (!m_batchInputs.defined() || m_batchInputs.shape()[0] != batch) {
        // Every training batch has the same shape (the loader drops the partial one), so these
        // tensors, and a graph recorded on them, serve the whole run.
        Shape inputShape = Shape(m_config.model.input);
        std::vector<std::int64_t> dims{batch};
        dims.insert(dims.end(), inputShape.dims().begin(), inputShape.dims().end());
        m_batchInputs = m_backend.empty(Shape(dims), DType::F32);
        m_batchLabels = m_backend.empty({batch}, DType::F32);
        m_graph.reset();
    }
    m_backend.upload(inputs, m_batchInputs);
    m_backend.upload(labels, m_batchLabels);
    const AdamCorrections corrections = m_optimizer.nextCorrections();
    float stepInputs[kStepInputCount] = {};
    stepInputs[slot(StepInput::LearningRate)] = m_schedule.rate(step - 1, epoch - 1, m_stepsPerEpoch, m_totalSteps);
    stepInputs[slot(StepInput::AdamCorrection1)] = corrections.first;
    stepInputs[slot(StepInput::AdamCorrection2)] = corrections.second;
    m_backend.upload(stepInputs, m_scalars.inputs);

    // Sampled steps run op by op with the probe; every other step runs exactly as without the lens.
    std::optional<NumericsProbe> probe;
    if (isNumericsStep(step)) {
        probe.emplace(*m_model, m_backend, probeSettings(m_scaler.scale(), m_config.numerics.scaledGradients));
        probe->measureWeights(); // the weights this step computes with, before the update
    }
    if (!probe && runStepOnGraph(step)) {
        m_graph->replay();
        ++m_graphSteps;
    } else {
        PassState pass{m_backend, true, m_config.training.seed, static_cast<std::uint64_t>(step)};
        pass.tap = probe ? &*probe : nullptr;
        queueStep(m_backend, pass, probe ? &*probe : nullptr);
        ++m_eagerSteps;
    }
    // The one wait of the step: its record, read once everything is queued.
    float state[kStepStateCount];
    m_backend.download(m_scalars.state, state);
    if (probe)
        out.numerics = probe->record(step);

    out.loss = state[slot(StepState::Loss)];
    out.correct = static_cast<std::int64_t>(state[slot(StepState::Correct)]);
    out.lossFinite = std::isfinite(out.loss);
    out.skipped = state[slot(StepState::Skipped)] != 0.0f;
    out.gradAmax = state[slot(StepState::GradAmax)];
    out.gradNorm = state[slot(StepState::GradNorm)];
    const float scaleUsed = state[slot(StepState::ScaleUsed)];
    out.scaleUpdate = m_scaler.update(out.skipped);
    // The host's LossScaler mirrors the device's rule; they must agree bit for bit.
    MANTISSA_ASSERT(out.scaleUpdate.before == scaleUsed && out.scaleUpdate.after == state[slot(StepState::LossScale)]);
    if (!out.skipped) {
        m_optimizer.stepTaken();
        return out;
    }
    const float first = state[slot(StepState::FirstNonFinite)];
    out.firstNonFinite = first == kLossNotFinite ? std::string("loss (forward pass)")
                                                 : m_params[static_cast<std::size_t>(first)]->name;
    // The weights are those the step computed with (a skipped step changes none), so the
    // passes run again on the tensors as the run stores them to find where it overflowed.
    out.location = locateOverflow(m_batchInputs, m_batchLabels, step, scaleUsed);
    return out;
}

void Trainer::uploadScalerState()
{
    const LossScalerState s = m_scaler.state();
    float state[kStepStateCount] = {};
    state[slot(StepState::LossScale)] = s.scale;
    state[slot(StepState::GoodSteps)] = static_cast<float>(s.goodSteps);
    state[slot(StepState::HysteresisLeft)] = static_cast<float>(s.hysteresisLeft);
    state[slot(StepState::ScaleUsed)] = s.scale;
    m_backend.upload(state, m_scalars.state);
}

bool Trainer::isNumericsStep(std::int64_t step) const
{
    const int every = m_config.numerics.every;
    return every > 0 && step % every == 0;
}

ProbeSettings Trainer::probeSettings(float scale, bool scaledGradients) const
{
    ProbeSettings settings;
    // An fp32 run is measured against fp16: what would fp16 make of it.
    settings.runTarget = m_config.precision == PrecisionMode::Fp32 ? DType::F16 : lowPrecisionType(m_config.precision);
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
    std::int64_t step = m_stepOffset;
    int consecutiveSkips = 0;
    const int epochs = std::max(m_config.training.epochs, 1);
    m_backend.resetPeakBytes();
    uploadScalerState(); // a checkpoint may have restored the scaler since the last run
    double epochLoss = 0; // over the current epoch's finite steps
    std::int64_t epochCorrect = 0, epochSamples = 0, finiteSteps = 0;
    auto conclude = [&](RunStatus status, const std::string& message) {
        // A run cut short still reports what its weights are worth now.
        if (status != RunStatus::Finished && status != RunStatus::Failed && summary.epochs == 0) {
            const Evaluation test = evaluate(m_data.test);
            summary.testLoss = test.loss;
            summary.testAccuracy = test.accuracy;
            summary.trainLoss = finiteSteps ? static_cast<float>(epochLoss / static_cast<double>(finiteSteps)) : NAN;
        }
        summary.steps = step;
        summary.trainSeconds = trainSeconds;
        summary.samplesPerSecond = trainSeconds > 0 ? static_cast<double>(trainedSamples) / trainSeconds : 0;
        summary.wallSeconds = secondsSince(runStart);
        finishRun(summary, status, message);
        return summary;
    };

    try {
        for (int epoch = 1; epoch <= epochs && step < m_totalSteps; ++epoch) {
            loader.startEpoch(epoch);
            epochLoss = 0;
            epochCorrect = 0;
            epochSamples = 0;
            finiteSteps = 0;
            while (step < m_totalSteps && loader.next(batch)) {
                while (m_paused && !m_stopRequested)
                    std::this_thread::sleep_for(std::chrono::milliseconds(20));
                if (m_stopRequested)
                    return conclude(RunStatus::Stopped, "stopped by the user at step " + std::to_string(step));
                ++step;
                const auto stepStart = Clock::now();
                StepOutcome outcome = trainStep(batch.inputs.data(), batch.labels.data(), batch.size, step, epoch);
                const ScaleUpdate update = outcome.scaleUpdate;
                const double stepSeconds = secondsSince(stepStart);
                trainSeconds += stepSeconds;
                trainedSamples += batch.size;

                StepRecord record;
                record.step = step;
                record.epoch = epoch;
                record.loss = outcome.loss;
                record.learningRate = m_schedule.rate(step - 1, epoch - 1, m_stepsPerEpoch, m_totalSteps);
                record.lossScale = update.before;
                record.skipped = outcome.skipped;
                record.gradNorm = outcome.gradNorm;
                record.samplesPerSecond = static_cast<float>(static_cast<double>(batch.size) / stepSeconds);
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
                    overflow.step = step;
                    overflow.scaleBefore = update.before;
                    overflow.scaleAfter = update.after;
                    overflow.parameter = outcome.firstNonFinite;
                    overflow.location = std::move(outcome.location);
                    publish(overflow);
                } else {
                    consecutiveSkips = 0;
                    epochLoss += outcome.loss;
                    epochCorrect += outcome.correct;
                    epochSamples += batch.size;
                    ++finiteSteps;
                }
                if (update.changed()) {
                    EventRecord change;
                    change.kind = EventKind::ScaleChange;
                    change.step = step;
                    change.scaleBefore = update.before;
                    change.scaleAfter = update.after;
                    publish(change);
                }
                const bool fp32Diverged = !outcome.lossFinite && m_config.precision == PrecisionMode::Fp32;
                if (fp32Diverged || consecutiveSkips >= kMaxConsecutiveSkips) {
                    const std::string why = fp32Diverged
                        ? "the loss became non-finite at step " + std::to_string(step) + " in fp32; lower the learning rate"
                        : std::to_string(consecutiveSkips) + " consecutive steps had non-finite gradients (last at " +
                              outcome.firstNonFinite + ")" +
                              (m_scaler.kind() == LossScaler::Kind::Dynamic
                                   ? "; the loss scale cannot recover"
                                   : "; try mixed precision or dynamic loss scaling");
                    EventRecord divergence;
                    divergence.kind = EventKind::Divergence;
                    divergence.step = step;
                    divergence.message = why;
                    publish(divergence);
                    return conclude(RunStatus::Diverged, why);
                }
            }
            const Evaluation test = evaluate(m_data.test);
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
