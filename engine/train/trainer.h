#pragma once
// The step loop. The Trainer owns the model, optimizer, scaler and schedule for one run,
// reports through TrainingObserver (plain structs, on the training thread), and is
// stopped or paused through atomics from any thread.
#include "engine/config/run_config.h"
#include "engine/data/batch_loader.h"
#include "engine/data/dataset.h"
#include "engine/lens/numerics_probe.h"
#include "engine/lens/shadow_model.h"
#include "engine/model/model.h"
#include "engine/observe/records.h"
#include "engine/optim/lr_schedule.h"
#include "engine/optim/optimizer.h"
#include "engine/precision/loss_scaler.h"
#include "engine/train/run_summary.h"
#include "engine/train/training_position.h"

#include <atomic>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mantissa {

class DataParallel; // engine/distributed/data_parallel.h: private to the engine

struct Evaluation {
    float loss = 0;     // mean cross-entropy, or mean squared error (regression)
    float accuracy = 0; // NaN for regression, which has none
    std::int64_t samples = 0;
};

class Trainer {
public:
    // Builds the model (ConfigError on a bad spec) and everything the run needs, starting from
    // the weights of training.init_from when set (IoError as loadCheckpoint). `data` must
    // outlive the Trainer; so must `backend`. With `ranks`, this is one replica of a
    // data-parallel run (engine/distributed/data_parallel.h): it trains on its slice of every
    // global batch and averages gradients with the other ranks; `ranks` must outlive the Trainer.
    Trainer(const RunConfig& config, Backend& backend, const DatasetSplits& data, DataParallel* ranks = nullptr);
    ~Trainer();

    void addObserver(TrainingObserver* observer) { m_observers.push_back(observer); }
    // Trains to completion, stop, divergence or failure. Never throws for training-time
    // problems: they end the run with a status and a message (and an Error event).
    RunSummary run();

    // Thread-safe controls.
    void requestStop() { m_stopRequested = true; }
    void setPaused(bool paused) { m_paused = paused; }
    bool isPaused() const { return m_paused; }

    Evaluation evaluate(const Dataset& data);

    // Checkpoints hold fp32 master weights, buffers, every optimizer state tensor, the loss
    // scaler, Adam's step count, the recipe's delayed-scaling history and position(): a full
    // training state. Callable before or after run(), from an observer's onEpoch (every step of
    // the epoch has been read back by then, so the file holds the weights the epoch's evaluation
    // measured; the run recorder saves its every-N-epochs checkpoints there) and from its
    // onStatePoint.
    void saveCheckpoint(const std::string& path) const;
    // Loads a checkpoint from any precision into this run's precision. With weightsOnly the
    // optimizer and scaler start fresh (fine-tuning an fp32 model in mixed-fp16, say).
    void loadCheckpoint(const std::string& path, bool weightsOnly);
    // Continues the run a checkpoint was saved from, at its position: weights, optimizer state
    // and Adam's step count, the loss scaler (when this run scales the loss the same way), the
    // delayed-scaling history (when this run has the same precision) and the place in the data
    // order. This run's own settings apply from the next step on: a fork with none changed
    // continues bit for bit as the saved run did. Call before run(). Returns what carried over,
    // in words. IoError: unreadable, saved before checkpoints kept a position, or saved from a
    // model of other shapes (the tensor and both shapes named, nothing loaded).
    std::string resumeFrom(const std::string& path);
    // Where the step loop stands: after run(), or at an observer's onEpoch or onStatePoint.
    const TrainingPosition& position() const { return m_position; }

    Model& model() { return *m_model; }
    // The data-parallel ranks this replica trains with, or nullptr for a single process.
    DataParallel* ranks() const { return m_ranks; }
    const RunConfig& config() const { return m_config; }
    const LossScaler& scaler() const { return m_scaler; }
    // Sets the loss scaler's state, on the host and on the device, for the steps queued from
    // now on: before run(), or from an observer's onStep when steps are not run ahead (a step
    // queued ahead already carries the state it was queued with).
    void restoreScalerState(const LossScalerState& state);
    std::int64_t stepsPerEpoch() const { return m_stepsPerEpoch; }
    std::int64_t totalSteps() const { return m_totalSteps; }
    // How steps ran: "captured at step 2", "training.graphs is off", "capture failed: ...".
    const std::string& graphStatus() const { return m_graphStatus; }
    // Steps replayed from the captured graph, and steps run op by op.
    std::int64_t graphSteps() const { return m_graphSteps; }
    std::int64_t eagerSteps() const { return m_eagerSteps; }
    // Whether steps are queued before the previous step's record is read (training.run_ahead),
    // and how many ran ahead of a skipped step, were held on the device and queued again.
    bool runsAhead() const { return m_runAhead; }
    // Labels a sample carries: its regression targets (the model's outputs), or one class index
    // a prediction (a token's for a sequence model).
    std::int64_t labelsPerSample() const { return regression() ? m_config.model.classes : m_model->labelsPerSample(); }
    std::int64_t requeuedSteps() const { return m_requeuedSteps; }

private:
    bool regression() const { return m_data.task == DataTask::Regression; }
    // Data-parallel, collective: "; batch-norm running statistics identical on every rank" or
    // how far the ranks' differ, for the finished event; empty for a model without them.
    std::string describeBufferSpread();
    // What the host learns from a finished step.
    struct StepOutcome {
        float loss = 0;
        std::int64_t correct = 0;
        bool skipped = false;
        bool lossFinite = true;
        float gradNorm = 0;
        float gradAmax = 0;
        std::string firstNonFinite;
        std::string overflowRanks;                // data-parallel: which ranks had non-finite values of their own
        int firstRank = -1;                       // data-parallel: the lowest of them, -1 if none
        std::optional<OverflowLocation> location; // skipped steps
        std::optional<NumericsRecord> numerics;   // sampled steps
        std::optional<ShadowRecord> shadow;       // shadowed steps
        ScaleUpdate scaleUpdate;
        // Data-parallel with the all-reduce in the 16-bit compute type: what this step's sums did.
        std::optional<std::int64_t> allReduceFlushed, allReduceOverflowed;
    };
    // A step on the device whose record the host has not read yet.
    struct QueuedStep {
        std::int64_t step = 0;
        int epoch = 0;
        HostBatch batch;
        std::unique_ptr<NumericsProbe> probe;     // sampled steps
        std::unique_ptr<ShadowComparison> shadow; // shadowed steps
        std::unique_ptr<HostRead> record;         // StepState, on its way to the host
    };
    // Uploads the batch and the step's inputs and queues the step (trainer_step.cpp).
    QueuedStep queueTrainStep(HostBatch batch, std::int64_t step, int epoch, bool ahead);
    // Waits for the step's record and turns it into an outcome. On a skipped step, locates the
    // overflow (successorQueued: the step queued after it, held, moved the batch-norm
    // statistics, which are put back first).
    StepOutcome finishStep(QueuedStep& queued, bool successorQueued);
    // Queues a held step again, now that the step before it is known.
    QueuedStep requeue(QueuedStep held);
    void uploadBatch(const HostBatch& batch);
    // Queues one whole step (forward, loss, backward, finite check, clip, update, loss-scale
    // rule) through `backend` on the batch tensors and m_scalars, reading nothing back: the
    // same body runs op by op or is recorded into a graph.
    void queueStep(Backend& backend, PassState& pass, NumericsProbe* probe, ShadowComparison* shadow);
    // Data parallel, all-reduce in the compute type: averages the gradients in their own types.
    void averageGradientsByType(Backend& backend);
    // Replays the graph, capturing it first when this is the first eligible step; false when
    // the step must run op by op.
    bool runStepOnGraph(std::int64_t step);
    // Why this run cannot use a graph at all, or empty.
    std::string graphIneligibility() const;
    bool runAheadWanted() const;
    // The host scaler's state into m_scalars.state, where the device carries it on.
    void uploadScalerState();
    bool isNumericsStep(std::int64_t step) const;
    bool isShadowStep(std::int64_t step) const;
    // Steps that read tensors on the host as they go: run op by op, with nothing queued beside them.
    bool isObservedStep(std::int64_t step) const { return isNumericsStep(step) || isShadowStep(step); }
    // Whether the step loop ends here: this process's stop request, or for a data-parallel
    // run the one the ranks agreed on.
    bool stopNow() const { return m_ranks ? m_stopAgreed : m_stopRequested.load(); }
    ProbeSettings probeSettings(float scale, bool scaledGradients) const;
    // On a skipped step that was not sampled: runs the step's passes again with a probe
    // (same batch, same dropout masks, batch-norm statistics restored) to find the first
    // non-finite tensor. Skipped steps only, so a healthy run never pays for it.
    std::optional<OverflowLocation> locateOverflow(const Tensor& x, const Tensor& y, std::int64_t step, float scale);
    void publish(const EventRecord& event);
    // Samples of a step across all ranks: its batch is this rank's slice.
    std::int64_t globalSamples(const QueuedStep& queued) const;

    // run(), step by step (trainer.cpp). RunState is what one run carries from step to step.
    struct RunState;
    struct RunEnd {
        RunStatus status;
        std::string message;
    };
    // Queues and publishes an epoch's steps; the end of the run when the epoch ends it (stopped,
    // diverged), else nothing, with every step of the epoch published.
    std::optional<RunEnd> trainEpoch(RunState& run, BatchLoader& loader, const TrainingPosition& start);
    // At a training.save_state_every step: drains and tells the observers (onStatePoint).
    void offerStatePoint(RunState& run, const BatchLoader& loader);
    // Queues step run.lastQueued on run.batch, publishes the step queued before it (running
    // ahead) and queues the new one again when that one was skipped; drains unless running ahead.
    void queueNextStep(RunState& run, int epoch);
    // Reads and publishes the step in flight, if any, with nothing queued after it.
    void drain(RunState& run);
    // A finished step's record and events, and the run's counts; sets run.divergence when the
    // run must end.
    void publishStep(RunState& run, const QueuedStep& queued, StepOutcome& outcome);
    void publishStepRecord(const RunState& run, const QueuedStep& queued, const StepOutcome& outcome,
                           double stepSeconds);
    void publishOverflow(std::int64_t step, StepOutcome& outcome);
    void checkDivergence(RunState& run, std::int64_t step, const StepOutcome& outcome);
    // Evaluates on the test set and publishes the epoch's record.
    void evaluateEpoch(RunState& run, int epoch);
    // Publishes an Error event for a training-time exception; returns the run's message.
    std::string reportFailure(const RunState& run, const std::exception& e);
    // Fills the summary (evaluating a run cut short before its first epoch ended) and
    // publishes the Finished event.
    RunSummary conclude(RunState& run, const RunEnd& end);

    RunConfig m_config;
    Backend& m_backend;
    const DatasetSplits& m_data;
    DataParallel* m_ranks = nullptr;
    std::unique_ptr<Model> m_model;
    std::unique_ptr<ShadowModel> m_shadow; // numerics.shadow_every > 0
    Optimizer m_optimizer;
    LrSchedule m_schedule;
    LossScaler m_scaler;
    std::vector<Parameter*> m_params; // backward order
    std::vector<TrainingObserver*> m_observers;
    std::atomic<bool> m_stopRequested{false};
    // Data parallel: a stop every rank agreed on in the last step's agreement. The loop reads
    // this, never a rank's own request, so that every rank leaves after the same step; a rank
    // that left on its own request would leave the others waiting in a collective.
    bool m_stopAgreed = false;
    std::atomic<bool> m_paused{false};
    std::int64_t m_stepsPerEpoch = 0, m_totalSteps = 0;
    TrainingPosition m_position;                // where the loop stands (saved with a checkpoint)
    std::optional<TrainingPosition> m_resumeAt; // resumeFrom(): where run() starts
    // The step as the device sees it: the batch, the step's scalars, and its graph.
    Tensor m_batchInputs, m_batchLabels;
    StepScalars m_scalars;
    std::unique_ptr<StepGraph> m_graph;
    bool m_graphTried = false;
    std::string m_graphStatus; // non-empty before a capture: why there is none
    std::int64_t m_graphSteps = 0, m_eagerSteps = 0;
    bool m_runAhead = false;
    std::int64_t m_requeuedSteps = 0;
    // Batch-norm running statistics and their copy taken at the start of each step (run ahead only).
    std::vector<std::pair<Tensor*, Tensor>> m_bufferSnapshots;
};

} // namespace mantissa
