// A 16-bit gradient left loss-scaled for the optimizer to unscale as it reads it
// (Backend::unscalesInOptimizer, OptimizerSlot::scaledGrad): the CPU backend then writes no
// fp32 copy of the gradients, and everything must come out as it did with the copy. Checked at
// the step ops (SGD with momentum, Nesterov and decay; Adam; AdamW; fp16 and bf16 gradients;
// a scale whose inverse rounds; a non-finite gradient) and through whole training runs, where a
// clip threshold no norm reaches (1e30) forces the path with the copies while computing the
// same arithmetic: weights, optimizer state and every step record equal bit for bit, skipped
// steps included, op by op and replayed from a recorded step.
#include "engine/backend/backend.h"
#include "engine/backend/recording_backend.h"
#include "engine/config/run_config.h"
#include "engine/data/dataset.h"
#include "engine/train/trainer.h"

#include "random_tensor.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace mantissa;
using mantissa::test_support::randomValues;

namespace {

std::vector<std::uint32_t> bitsOf(const Tensor& t)
{
    std::vector<std::uint32_t> out;
    for (float v : t.toFloats())
        out.push_back(std::bit_cast<std::uint32_t>(v));
    return out;
}

// One parameter of `n` values with its 16-bit working copy and gradient, on `backend`.
struct Param {
    Tensor master, working, grad, fp32Grad, state1, state2;
};

Param makeParam(Backend& backend, std::int64_t n, DType type, unsigned seed, float gradientScale)
{
    Param p;
    p.master = Tensor::fromFloats({n}, randomValues(static_cast<std::size_t>(n), seed, 0.1f), DType::F32);
    p.working = backend.empty({n}, type);
    backend.cast(p.master, p.working);
    p.grad = Tensor::fromFloats({n}, randomValues(static_cast<std::size_t>(n), seed + 1, gradientScale), type);
    p.fp32Grad = backend.empty({n}, DType::F32);
    backend.fill(p.fp32Grad, 0.0f);
    p.state1 = Tensor::fromFloats({n}, randomValues(static_cast<std::size_t>(n), seed + 2, 0.01f), DType::F32);
    std::vector<float> v = randomValues(static_cast<std::size_t>(n), seed + 3, 1e-4f);
    for (float& x : v)
        x = std::fabs(x);
    p.state2 = Tensor::fromFloats({n}, v, DType::F32);
    return p;
}

struct StepOutcome {
    std::vector<std::uint32_t> master, working, state1, state2;
    float gradAmax = 0, gradNorm = 0, skipped = 0, firstNonFinite = 0;
};

enum class Update { Sgd, Nesterov, Adam, AdamW };

// unscaleAndCheckFinite then one update, on `backend`, leaving the gradients scaled or not.
StepOutcome step(Backend& backend, Param p, float lossScale, Update update, bool leaveScaled)
{
    // Copies of the handles would share buffers: the two runs each start from fresh tensors.
    const auto fresh = [&](const Tensor& t) {
        Tensor copy = backend.empty(t.shape(), t.dtype());
        backend.cast(t, copy);
        return copy;
    };
    p.master = fresh(p.master);
    p.working = fresh(p.working);
    p.state1 = fresh(p.state1);
    p.state2 = fresh(p.state2);
    StepScalars scalars;
    scalars.inputs = backend.empty({kStepInputCount}, DType::F32);
    scalars.state = backend.empty({kStepStateCount}, DType::F32);
    backend.fill(scalars.inputs, 0.0f);
    backend.fill(scalars.state, 0.0f);
    scalars.state.f32()[slot(StepState::LossScale)] = lossScale;
    scalars.inputs.f32()[slot(StepInput::LearningRate)] = 0.01f;
    scalars.inputs.f32()[slot(StepInput::AdamCorrection1)] = 0.1f;
    scalars.inputs.f32()[slot(StepInput::AdamCorrection2)] = 0.001f;
    const Tensor* grads[] = {&p.grad};
    Tensor* fp32Grads[] = {leaveScaled ? nullptr : &p.fp32Grad};
    backend.unscaleAndCheckFinite(grads, fp32Grads, scalars, true);
    backend.clipGradNorm(fp32Grads, scalars, 0.0f, true);
    OptimizerSlot s{&p.master, &p.fp32Grad, &p.state1, nullptr, &p.working, true};
    if (leaveScaled)
        s.scaledGrad = &p.grad;
    if (update == Update::Sgd || update == Update::Nesterov) {
        backend.sgdStep({&s, 1}, {0.9f, 1e-3f, update == Update::Nesterov, {}}, scalars);
    } else {
        s.state2 = &p.state2;
        AdamSettings a;
        a.weightDecay = 0.01f;
        a.decoupledDecay = update == Update::AdamW;
        backend.adamStep({&s, 1}, a, scalars);
    }
    StepOutcome o{bitsOf(p.master), bitsOf(p.working), bitsOf(p.state1), bitsOf(p.state2)};
    const auto at = [&](StepState k) { return scalars.state.f32()[slot(k)]; };
    o.gradAmax = at(StepState::GradAmax);
    o.gradNorm = at(StepState::GradNorm);
    o.skipped = at(StepState::Skipped);
    o.firstNonFinite = at(StepState::FirstNonFinite);
    return o;
}

void expectSame(const StepOutcome& a, const StepOutcome& b)
{
    EXPECT_EQ(a.master, b.master);
    EXPECT_EQ(a.working, b.working);
    EXPECT_EQ(a.state1, b.state1);
    EXPECT_EQ(a.state2, b.state2);
    EXPECT_EQ(std::bit_cast<std::uint32_t>(a.gradAmax), std::bit_cast<std::uint32_t>(b.gradAmax));
    EXPECT_EQ(std::bit_cast<std::uint32_t>(a.gradNorm), std::bit_cast<std::uint32_t>(b.gradNorm));
    EXPECT_EQ(a.skipped, b.skipped);
    EXPECT_EQ(a.firstNonFinite, b.firstNonFinite);
}

} // namespace

TEST(ScaledGradientStep, TheCpuBackendUnscalesInItsOptimizer)
{
    auto backend = makeCpuBackend(2);
    EXPECT_TRUE(backend->unscalesInOptimizer());
    RecordingBackend recorder(*backend);
    EXPECT_TRUE(recorder.unscalesInOptimizer());
}

TEST(ScaledGradientStep, UpdatesMatchTheFp32CopyBitForBit)
{
    auto backend = makeCpuBackend(2);
    // 3000: its inverse is not a power of two, so unscaling rounds; 200,000 values span several
    // threads' blocks and a short last block.
    for (const DType type : {DType::F16, DType::BF16})
        for (const Update update : {Update::Sgd, Update::Nesterov, Update::Adam, Update::AdamW})
            for (const float lossScale : {1024.0f, 3000.0f}) {
                SCOPED_TRACE(std::string(dtypeName(type)) + " update " + std::to_string(static_cast<int>(update)) +
                             " scale " + std::to_string(lossScale));
                const Param p = makeParam(*backend, 200003, type, 11, 1e-3f * lossScale);
                const StepOutcome viaCopy = step(*backend, p, lossScale, update, false);
                const StepOutcome scaled = step(*backend, p, lossScale, update, true);
                expectSame(viaCopy, scaled);
                // The update did move the weights: the comparison is not of two no-ops.
                EXPECT_NE(scaled.master, bitsOf(p.master));
                EXPECT_EQ(scaled.skipped, 0.0f);
                EXPECT_GT(scaled.gradNorm, 0.0f);
            }
}

TEST(ScaledGradientStep, ANonFiniteScaledGradientStillSkipsTheStep)
{
    auto backend = makeCpuBackend(2);
    Param p = makeParam(*backend, 70000, DType::F16, 5, 100.0f);
    std::vector<float> g = p.grad.toFloats();
    g[65000] = INFINITY;
    p.grad = Tensor::fromFloats({70000}, g, DType::F16);
    const StepOutcome viaCopy = step(*backend, p, 1024.0f, Update::Sgd, false);
    const StepOutcome scaled = step(*backend, p, 1024.0f, Update::Sgd, true);
    expectSame(viaCopy, scaled);
    EXPECT_EQ(scaled.skipped, 1.0f);
    EXPECT_EQ(scaled.firstNonFinite, 0.0f);
    EXPECT_EQ(scaled.master, bitsOf(p.master)); // untouched
}

TEST(ScaledGradientStep, ARecordedStepReplaysTheScaledPath)
{
    auto backend = makeCpuBackend(2);
    const Param p = makeParam(*backend, 50000, DType::BF16, 9, 5.0f);
    const StepOutcome direct = step(*backend, p, 3000.0f, Update::Sgd, true);
    RecordingBackend recorder(*backend);
    // Recorded, nothing runs; the tape's replay must give the direct run's bits. The step's
    // tensors are created on the target, so their handles outlive the recording.
    Param q = p;
    q.master = backend->empty(p.master.shape(), DType::F32);
    backend->cast(p.master, q.master);
    q.working = backend->empty(p.working.shape(), p.working.dtype());
    backend->cast(p.working, q.working);
    q.state1 = backend->empty(p.state1.shape(), DType::F32);
    backend->cast(p.state1, q.state1);
    StepScalars scalars;
    scalars.inputs = backend->empty({kStepInputCount}, DType::F32);
    scalars.state = backend->empty({kStepStateCount}, DType::F32);
    backend->fill(scalars.inputs, 0.0f);
    backend->fill(scalars.state, 0.0f);
    scalars.state.f32()[slot(StepState::LossScale)] = 3000.0f;
    scalars.inputs.f32()[slot(StepInput::LearningRate)] = 0.01f;
    const Tensor* grads[] = {&q.grad};
    Tensor* fp32Grads[] = {nullptr};
    recorder.unscaleAndCheckFinite(grads, fp32Grads, scalars, true);
    recorder.clipGradNorm(fp32Grads, scalars, 0.0f, true);
    OptimizerSlot s{&q.master, &q.fp32Grad, &q.state1, nullptr, &q.working, true};
    s.scaledGrad = &q.grad;
    recorder.sgdStep({&s, 1}, {0.9f, 1e-3f, false, {}}, scalars);
    EXPECT_EQ(bitsOf(q.master), bitsOf(p.master)); // recorded, not run
    recorder.replay();
    EXPECT_EQ(bitsOf(q.master), direct.master);
    EXPECT_EQ(bitsOf(q.working), direct.working);
    EXPECT_EQ(bitsOf(q.state1), direct.state1);
}

namespace {

RunConfig trainingConfig(const std::string& mode, const std::string& optimizer, float clipNorm,
                         const std::string& graphs)
{
    // A starting scale of 2^24 overflows fp16's gradients at first, so the runs skip steps and
    // back off before they train.
    const std::string json = R"({
      "name": "scaled-gradient-step",
      "model": {"input": [1, 8, 8], "classes": 4, "layers": [
        {"type": "flatten"}, {"type": "linear", "units": 32, "activation": "relu"},
        {"type": "linear", "units": 32, "activation": "relu"}, {"type": "linear", "units": 4}]},
      "data": {"dataset": "synthetic", "synthetic_shape": [1, 8, 8], "synthetic_classes": 4,
               "synthetic_train": 512, "synthetic_test": 128},
      "optimizer": {"type": ")" +
                             optimizer + R"(", "lr": 0.01, "momentum": )" + (optimizer == "sgd" ? "0.9" : "0") +
                             R"(, "weight_decay": 0.001, "grad_clip_norm": )" + std::to_string(clipNorm) + R"(},
      "precision": {"mode": ")" +
                             mode +
                             R"(", "loss_scale": {"type": "dynamic", "initial": 16777216, "growth_interval": 8}},
      "training": {"batch_size": 32, "epochs": 2, "seed": 3, "threads": 2, "graphs": ")" +
                             graphs + R"("}
    })";
    return parseRunConfig(json, "scaled_gradient_step_test");
}

struct Recorder final : TrainingObserver {
    std::vector<std::uint32_t> records;
    int skipped = 0;
    void onStep(const StepRecord& r) override
    {
        for (float v : {r.loss, r.lossScale, r.gradNorm})
            records.push_back(std::bit_cast<std::uint32_t>(v));
        records.push_back(r.skipped ? 1u : 0u);
        skipped += r.skipped ? 1 : 0;
    }
    void onEvent(const EventRecord&) override {}
};

struct TrainingRun {
    RunSummary summary;
    Recorder steps;
    std::vector<std::uint32_t> weights, state;
};

TrainingRun train(const RunConfig& config)
{
    auto backend = makeCpuBackend(2);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    Trainer trainer(config, *backend, data);
    TrainingRun run;
    trainer.addObserver(&run.steps);
    run.summary = trainer.run();
    for (const Parameter* p : trainer.model().parametersInBackwardOrder()) {
        for (std::uint32_t b : bitsOf(p->master))
            run.weights.push_back(b);
        for (const Tensor* s : {&p->state1, &p->state2})
            if (s->defined())
                for (std::uint32_t b : bitsOf(*s))
                    run.state.push_back(b);
    }
    return run;
}

} // namespace

TEST(ScaledGradientStep, TrainingRunsMatchThePathWithFp32Copies)
{
    for (const std::string mode : {"mixed-fp16", "mixed-bf16"})
        for (const std::string optimizer : {"sgd", "adamw"})
            for (const std::string graphs : {"off", "on"}) {
                SCOPED_TRACE(mode + " " + optimizer + " graphs " + graphs);
                // No clipping: the gradients stay scaled. A threshold no norm reaches: the same
                // arithmetic through the fp32 copies the clip needs.
                const TrainingRun scaled = train(trainingConfig(mode, optimizer, 0.0f, graphs));
                const TrainingRun viaCopy = train(trainingConfig(mode, optimizer, 1e30f, graphs));
                ASSERT_EQ(scaled.summary.status, RunStatus::Finished);
                ASSERT_EQ(viaCopy.summary.status, RunStatus::Finished);
                EXPECT_EQ(scaled.steps.records, viaCopy.steps.records);
                EXPECT_EQ(scaled.weights, viaCopy.weights);
                EXPECT_EQ(scaled.state, viaCopy.state);
                if (mode == "mixed-fp16") {
                    EXPECT_GT(scaled.steps.skipped, 0); // overflow steps were part of the comparison
                }
            }
}
