// The Trainer's step on the device: queuing a step (op by op or from its graph), reading
// its record, and running ahead of that read. The loop that drives it is in trainer.cpp.
//
// Running ahead (training.run_ahead): step s+1 is queued before step s's record is read, so
// the GPU never waits for the host. If step s turns out skipped, step s+1 was held on the
// device (StepState::Held: no weight, optimizer or scaler change); the trainer puts back the
// batch-norm statistics it moved, locates step s's overflow on the weights step s used, and
// queues step s+1 again. Records and events are bit-identical to running step by step.
#include "engine/data/batch_loader.h"
#include "engine/distributed/data_parallel.h"
#include "engine/model/task_loss.h"
#include "engine/train/trainer.h"

#include "engine/distributed/data_parallel.h"
#include "engine/util/check.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace mantissa {

void Trainer::queueStep(Backend& backend, PassState& pass, NumericsProbe* probe, ShadowComparison* shadow)
{
    backend.beginStep(m_scalars);
    // What this step's forward pass does to the batch-norm running statistics is undone if the
    // step is skipped or held, so they are copied first (a few floats per channel).
    for (auto& [buffer, snapshot] : m_bufferSnapshots)
        backend.cast(*buffer, snapshot);
    ModelForward forward = m_model->forward(pass, m_batchInputs);
    // dlogits is stored like the logits: in fp16 the scaled gradient is rounded here first.
    Tensor dlogits = backend.empty(forward.logits.shape(), forward.logits.dtype());
    taskLoss(backend, m_data.task, forward.logits, m_batchLabels, m_scalars, dlogits);
    if (probe) {
        probe->measureLossGradient(dlogits);
        GradientCapture capture(backend, m_params);
        m_model->backward(pass, dlogits, forward);
        capture.release();
    } else {
        m_model->backward(pass, dlogits, forward);
    }
    // The gradients as backward left them, before anything unscales, clips or averages them.
    if (shadow)
        shadow->compareWeightGradients();
    // Where the backend's optimizer can unscale a 16-bit gradient as it reads it, and nothing
    // else reads the fp32 copies (no clipping, no ranks averaging them), those copies are not
    // written at all: a null entry has the unscaling pass only measure its gradient.
    const bool leaveScaled = backend.unscalesInOptimizer() && !m_ranks && m_config.optimizer.gradClipNorm == 0.0f;
    std::vector<const Tensor*> grads;
    std::vector<Tensor*> fp32Grads;
    for (Parameter* p : m_params) {
        grads.push_back(&p->grad);
        fp32Grads.push_back(leaveScaled && Optimizer::readsScaledGradient(*p) ? nullptr : &p->fp32Grad);
    }
    // Data parallel, all-reduce in the compute type: the scaled gradients are averaged as they
    // are, so the finite check below sees what the 16-bit sum did.
    if (m_ranks && m_ranks->reducesBeforeUnscale())
        averageGradientsByType(backend);
    // From here on the device decides: a non-finite loss or gradient marks the step skipped,
    // and the clip, the optimizer and the loss-scale rule read that mark where they run.
    // The norm is measured in the unscaling pass unless the ranks average the gradients
    // between that pass and the clip.
    const bool fusedNorm = !m_ranks || m_ranks->reducesBeforeUnscale();
    backend.unscaleAndCheckFinite(grads, fp32Grads, m_scalars, fusedNorm);
    if (m_ranks) {
        if (!m_ranks->reducesBeforeUnscale())
            m_ranks->averageGradients(backend, fp32Grads, DType::F32);
        // Before anything reads the skip mark: every rank must skip the same steps.
        m_stopAgreed = m_ranks->agreeOnStep(backend, m_scalars, m_stopRequested.load()) || m_stopAgreed;
    }
    // A skipped step leaves no trace, batch-norm statistics included: its forward pass moved
    // them, with inf or NaN where that pass overflowed, and a later evaluation would read them.
    for (auto& [buffer, snapshot] : m_bufferSnapshots)
        backend.copyIfSkipped(snapshot, *buffer, m_scalars);
    backend.clipGradNorm(fp32Grads, m_scalars, m_config.optimizer.gradClipNorm, fusedNorm);
    m_optimizer.queueStep(backend, m_params, m_scalars, leaveScaled);
    backend.updateLossScale(m_scalars, m_scaler.rule());
}

void Trainer::averageGradientsByType(Backend& backend)
{
    // One all-reduce per gradient type (a layer overridden to fp32 keeps fp32 gradients).
    for (const DType type : {DType::F32, DType::F16, DType::BF16}) {
        std::vector<Tensor*> ofType;
        for (Parameter* p : m_params)
            if (p->grad.dtype() == type)
                ofType.push_back(&p->grad);
        if (!ofType.empty())
            m_ranks->averageGradients(backend, ofType, type);
    }
}

std::string Trainer::graphIneligibility() const
{
    // The gradients go through the host and MPI in the middle of the step, or through NCCL with
    // its counts read back by the host, which no recording holds.
    if (m_ranks)
        return "data-parallel steps all-reduce mid-step (" + m_ranks->allReducePath() + ")";
    if (m_config.training.graphs == AutoSwitch::Off)
        return "training.graphs is off";
    // A tape saves the CPU nothing (no launches) and holds every temporary of the step at
    // once, which would inflate the peak memory the run reports.
    if (m_config.training.graphs == AutoSwitch::Auto && m_backend.device().kind == DeviceKind::Cpu)
        return "the CPU runs each op as it is called; training.graphs auto captures on GPUs only";
    if (runQuantisesGemms(m_config))
        return "the run's quantised GEMMs (precision mode " + precisionModeName(m_config.precision) +
               " or its layers' formats) keep their inputs' scales and amax histories on the host between ops, "
               "which a graph cannot record";
    const std::function<bool(const std::vector<LayerSpec>&)> hasDropout = [&](const std::vector<LayerSpec>& layers) {
        return std::any_of(layers.begin(), layers.end(),
                           [&](const LayerSpec& l) { return l.type == LayerKind::Dropout || hasDropout(l.body); });
    };
    if (hasDropout(m_config.model.layers))
        return "the model has dropout, which draws a new mask every step";
    return {};
}

bool Trainer::runAheadWanted() const
{
    // On the CPU every op has finished when it returns, so there is no wait to hide, and a
    // skipped step would cost its successor's passes twice.
    // Ranks agree on each step as it is queued: one in flight at a time keeps that simple.
    if (m_ranks)
        return false;
    const AutoSwitch setting = m_config.training.runAhead;
    return setting == AutoSwitch::On || (setting == AutoSwitch::Auto && m_backend.device().kind != DeviceKind::Cpu);
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
            queueStep(recorder, pass, nullptr, nullptr);
        },
        &why);
    m_graphStatus = m_graph ? "captured at step " + std::to_string(step) : "capture failed: " + why;
    return static_cast<bool>(m_graph);
}

void Trainer::uploadBatch(const HostBatch& batch)
{
    if (!m_batchInputs.defined() || m_batchInputs.shape()[0] != batch.size) {
        // Every training batch has the same shape (the loader drops the partial one), so these
        // tensors, and a graph recorded on them, serve the whole run.
        std::vector<std::int64_t> dims{batch.size};
        const Shape sample(m_config.model.input);
        dims.insert(dims.end(), sample.dims().begin(), sample.dims().end());
        m_batchInputs = m_backend.empty(Shape(dims), DType::F32);
        m_batchLabels = m_backend.empty({batch.size * labelsPerSample()}, DType::F32);
        m_graph.reset();
    }
    m_backend.upload(batch.inputs.data(), m_batchInputs);
    m_backend.upload(batch.labels.data(), m_batchLabels);
}

Trainer::QueuedStep Trainer::queueTrainStep(HostBatch batch, std::int64_t step, int epoch, bool ahead)
{
    QueuedStep q;
    q.step = step;
    q.epoch = epoch;
    q.batch = std::move(batch);
    uploadBatch(q.batch);
    // Ahead of a step whose outcome is unknown, Adam's count assumes that step is taken: if it
    // is not, this step is held and queued again with the count it should have.
    const AdamCorrections corrections = m_optimizer.nextCorrections(ahead ? 1 : 0);
    float inputs[kStepInputCount] = {};
    inputs[slot(StepInput::LearningRate)] = m_schedule.rate(step - 1, epoch - 1, m_stepsPerEpoch, m_totalSteps);
    inputs[slot(StepInput::AdamCorrection1)] = corrections.first;
    inputs[slot(StepInput::AdamCorrection2)] = corrections.second;
    inputs[slot(StepInput::HoldIfPreviousSkipped)] = ahead ? 1.0f : 0.0f;
    const auto roundingStep = static_cast<std::uint64_t>(step);
    inputs[slot(StepInput::RoundingStepLow)] =
        static_cast<float>(roundingStep & ((std::uint64_t{1} << kRoundingStepLowBits) - 1));
    inputs[slot(StepInput::RoundingStepHigh)] = static_cast<float>(roundingStep >> kRoundingStepLowBits);
    m_backend.upload(inputs, m_scalars.inputs);

    // Sampled steps run op by op with the probe; every other step runs exactly as without the lens.
    if (isNumericsStep(step)) {
        MANTISSA_ASSERT(!ahead); // the probe reads tensors on the host as the step goes
        ProbeSettings settings = probeSettings(m_scaler.scale(), m_config.numerics.scaledGradients);
        settings.gemmInputs = true; // the recipe's GEMM inputs too: only here do they take the slow quantiser
        q.probe = std::make_unique<NumericsProbe>(*m_model, m_backend, settings);
        q.probe->measureWeights(); // the weights this step computes with, before the update
    }
    if (isShadowStep(step)) {
        MANTISSA_ASSERT(!ahead); // the comparison reads tensors on the host as the step goes
        // The fp32 pass first, on the weights this step computes with, before the update.
        ShadowReference& reference = m_shadow->measure(*m_model, m_batchInputs, m_batchLabels, m_data.task,
                                                       m_config.training.seed, static_cast<std::uint64_t>(step));
        q.shadow = std::make_unique<ShadowComparison>(*m_model, m_backend, reference, m_scaler.scale());
    }
    if (!q.probe && !q.shadow && runStepOnGraph(step)) {
        m_graph->replay();
        ++m_graphSteps;
    } else {
        PassState pass{m_backend, true, m_config.training.seed, static_cast<std::uint64_t>(step)};
        pass.tap = q.probe.get();
        pass.nodeTap = q.shadow.get();
        pass.batchNormAcrossRanks = m_ranks ? m_ranks->batchNormSums() : nullptr;
        queueStep(m_backend, pass, q.probe.get(), q.shadow.get());
        ++m_eagerSteps;
    }
    q.record = m_backend.readAsync(m_scalars.state);
    return q;
}

Trainer::StepOutcome Trainer::finishStep(QueuedStep& q, bool successorQueued)
{
    const float* state = q.record->wait();
    // A step is held only behind a skipped one, and the loop queues it again before reading it.
    MANTISSA_ASSERT(state[slot(StepState::Held)] == 0.0f);
    StepOutcome out;
    if (q.probe)
        out.numerics = q.probe->record(q.step);
    if (q.shadow)
        out.shadow = q.shadow->record(q.step);
    out.loss = state[slot(StepState::Loss)];
    out.correct = static_cast<std::int64_t>(state[slot(StepState::Correct)]);
    out.lossFinite = std::isfinite(out.loss);
    out.skipped = state[slot(StepState::Skipped)] != 0.0f;
    out.gradAmax = state[slot(StepState::GradAmax)];
    out.gradNorm = state[slot(StepState::GradNorm)];
    const float scaleUsed = state[slot(StepState::ScaleUsed)];
    out.scaleUpdate = m_scaler.update(out.skipped);
    if (m_ranks && m_ranks->reducesBeforeUnscale()) {
        out.allReduceFlushed = m_ranks->lastStepCounts().flushedByDivision;
        out.allReduceOverflowed = m_ranks->lastStepCounts().overflowedInSum;
    }
    // The host's LossScaler mirrors the device's rule; they must agree bit for bit.
    MANTISSA_ASSERT(out.scaleUpdate.before == scaleUsed && out.scaleUpdate.after == state[slot(StepState::LossScale)]);
    if (!out.skipped) {
        m_optimizer.stepTaken();
        return out;
    }
    const float first = state[slot(StepState::FirstNonFinite)];
    if (m_ranks) {
        out.overflowRanks = m_ranks->lastOverflowRanks();
        out.firstRank = m_ranks->lastFirstNonFiniteRank();
    }
    out.firstNonFinite =
        first == kLossNotFinite ? std::string("loss (forward pass)") : m_params[static_cast<std::size_t>(first)]->name;
    // The weights are those the step computed with: a skipped step changes none, and a step
    // queued after it was held. That step did move the batch-norm statistics and replace the
    // batch; with nothing queued after it, the batch tensors still hold this step's batch.
    if (successorQueued) {
        for (auto& [buffer, snapshot] : m_bufferSnapshots)
            m_backend.cast(snapshot, *buffer);
        uploadBatch(q.batch);
    }
    // Also on a sampled step: its probe saw the weight gradients in fp32, before they were
    // rounded to 16 bits where they overflowed, so only the passes run again can locate it.
    out.location = locateOverflow(m_batchInputs, m_batchLabels, q.step, scaleUsed);
    return out;
}

Trainer::QueuedStep Trainer::requeue(QueuedStep held)
{
    ++m_requeuedSteps;
    return queueTrainStep(std::move(held.batch), held.step, held.epoch, false);
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

} // namespace mantissa
