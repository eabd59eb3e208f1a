// Whole training runs on the CUDA backend against the same runs on the CPU backend: the
// mlp and cnn presets for 200 steps in every 16- and 32-bit precision mode (and for 30 steps
// under the sub-16-bit recipes: CudaRecipeTrainingParity), from the same initial weights
// and the same batches (synthetic data, fixed seed), must lose the same at every step; and
// deep-mlp in pure fp16 and mixed-fp16, pushed into overflow over and over by its loss scale,
// must skip exactly the same steps (compared in lockstep: see CudaOverflowParity). The device
// is chosen the way a run chooses it: training.device, through selectBackend. A character-level
// GPT and a vision transformer shrunk to one block (CudaTransformerTrainingParity) do the same
// for the transformer ops in fp32 and mixed-bf16.
//
// Per-step loss tolerance, relative to the larger of the two losses (or of kLossFloor), per
// preset and mode (kTolerances). One op deviates by an ulp or so (cuda_parity_test), but each
// step's weights feed the next, so deviations compound, and how fast depends on the run.
// They were calibrated on the CPU with bench/parity_drift, which trains twice and nudges the
// second run after every step as a GPU's different rounding would: a quarter of the master
// weights by one fp32 ulp (fp32 and mixed modes: a GPU's fp32 GEMM accumulations differ by
// about that), or one in 1024 weights by one 16-bit ulp (pure modes: an update rounds
// differently only when it lands near a 16-bit rounding boundary). The drift that caused over
// 200 steps is in the comment of each entry; every tolerance is at least 5x above it.
//
// cnn is the sensitive one: around step 20 its loss falls 30-fold within ten steps, and a run
// that gets there a fraction of a step earlier differs there by a few percent. In fp32 one ulp
// was too kind a model: cuDNN's fp32 convolutions (Winograd and FFT among them) differ from
// the CPU's direct sums by up to ~1e-5 of their outputs' magnitude, which cuda_parity_test
// allows (reduction tolerance), and on an H100 the fp32 run drifted 2.2e-3 at steps 18-21,
// beyond a 1e-3 tolerance set from the ulp model. Nudging every weight by up to 1e-5 of itself
// ("relative:1e-5") drifts 6e-4 to 1.2e-2 over six seeds, all at steps 16-25; the tolerance
// is 5x the worst of them.
#include "device_under_test.h"

#include "engine/backend/backend_factory.h"
#include "engine/config/presets.h"
#include "engine/train/trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace mantissa;

namespace mantissa {
// Test names in CTest show "mixed-fp16" instead of the enum's byte.
void PrintTo(PrecisionMode mode, std::ostream* os) { *os << precisionModeName(mode); }
} // namespace mantissa

namespace {

constexpr std::int64_t kSteps = 200;
// Synthetic data is easy: the loss falls below 1e-3 within a few dozen steps, where the
// model already classifies every training sample and a difference in the third significant
// digit of a loss of 1e-5 says nothing about the backend. Below this floor the tolerance is
// absolute (relative x kLossFloor).
constexpr double kLossFloor = 0.05;

struct Tolerance {
    const char* preset;
    PrecisionMode mode;
    double relative;
};

const Tolerance kTolerances[] = {
    {"mlp", PrecisionMode::Fp32, 1e-3},      // drift 2.3e-7 (ulp), 2.4e-5 (relative:1e-5)
    {"mlp", PrecisionMode::MixedFp16, 1e-2}, // drift 6.2e-5
    {"mlp", PrecisionMode::MixedBf16, 1e-2}, // drift 2.7e-4
    {"mlp", PrecisionMode::Fp16, 1e-2},      // drift 4.0e-4
    {"mlp", PrecisionMode::Bf16, 2e-2},      // drift 1.9e-3
    {"cnn", PrecisionMode::Fp32, 6e-2},      // drift 8.6e-6 (ulp), up to 1.2e-2 (relative:1e-5)
    {"cnn", PrecisionMode::MixedFp16, 0.1},  // drift 1.8e-2
    {"cnn", PrecisionMode::MixedBf16, 0.15}, // drift 2.6e-2
    {"cnn", PrecisionMode::Fp16, 0.1},       // drift 1.4e-2
    {"cnn", PrecisionMode::Bf16, 0.25},      // drift 4.2e-2
};

double toleranceOf(const std::string& preset, PrecisionMode mode)
{
    for (const Tolerance& t : kTolerances)
        if (preset == t.preset && t.mode == mode)
            return t.relative;
    ADD_FAILURE() << "no tolerance stated for " << preset << " in " << precisionModeName(mode);
    return 0;
}

// The preset's model, optimizer, schedule and batch size, on synthetic data of its input
// shape: 50 batches, visited in a seeded order for 4 epochs.
RunConfig parityConfig(const std::string& preset, PrecisionMode mode)
{
    RunConfig c = presetConfig(preset);
    c.precision = mode;
    c.data.dataset = DatasetKind::Synthetic;
    c.data.syntheticShape = c.model.input;
    c.data.syntheticClasses = c.model.classes;
    c.data.syntheticTrain = c.training.batchSize * 50;
    c.data.syntheticTest = 256;
    c.training.epochs = 4;
    c.training.maxSteps = kSteps;
    c.training.threads = 0;
    return c;
}

struct StepLog final : TrainingObserver {
    std::vector<StepRecord> steps;
    void onStep(const StepRecord& r) override { steps.push_back(r); }
};

struct Trace {
    RunSummary summary;
    std::vector<StepRecord> steps;
    std::map<std::int64_t, OverflowLocation> overflows; // by step
    std::map<std::int64_t, NumericsRecord> numerics;    // by step, where the lens sampled
    std::string backend;
};

Trace train(RunConfig config, const std::string& device, const DatasetSplits& data)
{
    config.training.device = device;
    // The CPU side is the emulated oracle (training.cpu_kernels emulated), not native bf16.
    CudaOptions cuda;
    cuda.fp8Gemm = config.training.fp8Gemm;
    BackendSelection selection =
        selectBackend(config.training.device, CpuOptions{config.training.threads, CpuKernels::Emulated}, cuda);
    Trainer trainer(config, *selection.backend, data);
    StepLog log;
    trainer.addObserver(&log);
    Trace trace;
    trace.summary = trainer.run();
    trace.steps = std::move(log.steps);
    trace.backend = selection.backend->name();
    return trace;
}

std::vector<std::int64_t> skippedSteps(const Trace& t)
{
    std::vector<std::int64_t> out;
    for (const StepRecord& s : t.steps)
        if (s.skipped)
            out.push_back(s.step);
    return out;
}

std::string list(const std::vector<std::int64_t>& steps)
{
    std::ostringstream out;
    for (std::size_t i = 0; i < steps.size(); ++i)
        out << (i ? ", " : "") << steps[i];
    return "[" + out.str() + "]";
}

// Both runs finished every step; each step's loss within `relative`, its skip (except at the
// `knifeEdges` steps) and loss scale identical. Reports the first step beyond the tolerance
// and the worst one.
void expectSameTrajectory(const Trace& cpu, const Trace& device, double relative,
                          const std::set<std::int64_t>& knifeEdges = {})
{
    ASSERT_EQ(cpu.summary.status, RunStatus::Finished) << cpu.summary.message;
    ASSERT_EQ(device.summary.status, RunStatus::Finished) << device.backend << ": " << device.summary.message;
    ASSERT_EQ(cpu.steps.size(), static_cast<std::size_t>(kSteps));
    ASSERT_EQ(device.steps.size(), cpu.steps.size()) << device.backend;
    const auto decided = [&](const Trace& t) {
        std::vector<std::int64_t> steps;
        for (std::int64_t step : skippedSteps(t))
            if (!knifeEdges.contains(step))
                steps.push_back(step);
        return list(steps);
    };
    EXPECT_EQ(decided(device), decided(cpu)) << "skipped steps on " << device.backend << " (knife edges "
                                             << list({knifeEdges.begin(), knifeEdges.end()}) << " left out)";
    double worst = 0;
    std::size_t worstAt = 0, beyond = 0, firstBeyond = 0;
    for (std::size_t i = 0; i < cpu.steps.size(); ++i) {
        const double a = cpu.steps[i].loss, b = device.steps[i].loss;
        const double deviation = std::abs(a - b) / std::max({std::abs(a), std::abs(b), kLossFloor});
        if (!(deviation <= relative)) {
            if (beyond++ == 0)
                firstBeyond = i;
        }
        if (!(deviation <= worst)) {
            worst = deviation;
            worstAt = i;
        }
        EXPECT_EQ(device.steps[i].lossScale, cpu.steps[i].lossScale) << "step " << i + 1;
    }
    ::testing::Test::RecordProperty("worst_relative_loss_deviation", std::to_string(worst));
    EXPECT_EQ(beyond, 0u) << beyond << " of " << cpu.steps.size() << " steps beyond relative " << relative
                          << "; first at step " << firstBeyond + 1 << " (cpu " << cpu.steps[firstBeyond].loss << ", "
                          << device.backend << " " << device.steps[firstBeyond].loss << "); worst at step "
                          << worstAt + 1 << " (cpu " << cpu.steps[worstAt].loss << ", device "
                          << device.steps[worstAt].loss << ", deviation " << worst << ")";
}

struct TrainingCase {
    std::string preset;
    PrecisionMode mode;
};

void PrintTo(const TrainingCase& c, std::ostream* os) { *os << c.preset << " " << precisionModeName(c.mode); }

std::string caseName(const TrainingCase& c)
{
    std::string name = c.preset + "_" + precisionModeName(c.mode);
    std::replace(name.begin(), name.end(), '-', '_');
    return name;
}

class CudaTrainingParity : public test::DeviceTest, public ::testing::WithParamInterface<TrainingCase> {};

TEST_P(CudaTrainingParity, PerStepLossesMatchCpu)
{
    const TrainingCase& c = GetParam();
    const RunConfig config = parityConfig(c.preset, c.mode);
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    const Trace cpu = train(config, "cpu", data);
    const Trace device = train(config, test::deviceUnderTestName(), data);
    expectSameTrajectory(cpu, device, toleranceOf(c.preset, c.mode));
}

std::vector<TrainingCase> trainingCases()
{
    std::vector<TrainingCase> cases;
    for (const Tolerance& t : kTolerances)
        cases.push_back({t.preset, t.mode});
    return cases;
}

INSTANTIATE_TEST_SUITE_P(Presets, CudaTrainingParity, ::testing::ValuesIn(trainingCases()),
                         [](const ::testing::TestParamInfo<TrainingCase>& info) { return caseName(info.param); });

// The sub-16-bit recipes for 30 steps against the CPU: mlp under each, cnn under a per-tensor
// and three block recipes (the CUDA backend quantises the operands on the device,
// Backend::quantizeOperand; its convolutions apply per-tensor scales as the CPU's do). The quantised operands are the
// CPU's bit for bit (cuda_operand_quantizer_test); what differs is cuBLAS's and cuDNN's order
// of summation, so a GEMM's output may differ in its last bits and, now and then, a value of
// the next operand lands on the other side of a rounding boundary. Step 1's loss sees only the
// first of those (the forward pass from identical weights); later steps compound them. Passed
// on an H100 (2026-11-26) but not calibrated with bench/parity_drift: 1e-3 at step 1, then the
// preset's mixed-bf16 tolerance over 200 steps times 5 (mlp) or 2 (cnn: 0.3, already loose).
constexpr std::int64_t kRecipeSteps = 30;

struct RecipeCase {
    const char* preset;
    PrecisionMode mode;
    double tolerance; // after step 1
};

void PrintTo(const RecipeCase& c, std::ostream* os) { *os << c.preset << " " << precisionModeName(c.mode); }

class CudaRecipeTrainingParity : public test::DeviceTest, public ::testing::WithParamInterface<RecipeCase> {};

TEST_P(CudaRecipeTrainingParity, LossesMatchCpu)
{
    const RecipeCase& c = GetParam();
    RunConfig config = parityConfig(c.preset, c.mode);
    config.training.maxSteps = kRecipeSteps;
    // The emulated FP8 GEMM, whose sums these tolerances were set for; cuBLASLt's FP8 matmul on
    // sm_89+ is held to the emulation by cuda_fp8_gemm_test.
    config.training.fp8Gemm = Fp8Gemm::Emulated;
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    const Trace cpu = train(config, "cpu", data);
    const Trace device = train(config, test::deviceUnderTestName(), data);
    ASSERT_EQ(cpu.summary.status, RunStatus::Finished) << cpu.summary.message;
    ASSERT_EQ(device.summary.status, RunStatus::Finished) << device.backend << ": " << device.summary.message;
    ASSERT_EQ(cpu.steps.size(), static_cast<std::size_t>(kRecipeSteps));
    ASSERT_EQ(device.steps.size(), cpu.steps.size()) << device.backend;
    for (std::size_t i = 0; i < cpu.steps.size(); ++i) {
        const double a = cpu.steps[i].loss, b = device.steps[i].loss;
        const double deviation = std::abs(a - b) / std::max({std::abs(a), std::abs(b), kLossFloor});
        EXPECT_LE(deviation, i == 0 ? 1e-3 : c.tolerance)
            << "step " << i + 1 << ": cpu " << a << ", " << device.backend << " " << b;
    }
}

std::vector<RecipeCase> recipeCases()
{
    std::vector<RecipeCase> cases;
    for (const PrecisionMode m :
         {PrecisionMode::Fp8Hybrid, PrecisionMode::Fp8E4m3, PrecisionMode::Fp8Delayed, PrecisionMode::Fp8Block,
          PrecisionMode::Mxfp8, PrecisionMode::Mxfp6, PrecisionMode::Mxfp4, PrecisionMode::Nvfp4})
        cases.push_back({"mlp", m, 5e-2});
    for (const PrecisionMode m :
         {PrecisionMode::Fp8Hybrid, PrecisionMode::Fp8Block, PrecisionMode::Mxfp8, PrecisionMode::Mxfp4})
        cases.push_back({"cnn", m, 0.3});
    return cases;
}

INSTANTIATE_TEST_SUITE_P(Recipes, CudaRecipeTrainingParity, ::testing::ValuesIn(recipeCases()),
                         [](const ::testing::TestParamInfo<RecipeCase>& info) {
                             std::string name =
                                 std::string(info.param.preset) + "_" + precisionModeName(info.param.mode);
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

// A character-level GPT shrunk to run in seconds (char-gpt's layers: token and positional
// embeddings, one causal pre-norm transformer block of 2 heads, a final layer norm and a head
// tied to the embedding; width 32, context 16, batch 8) on a few kilobytes of text, so that
// every transformer op (row norms, the embedding's gather and scatter-add, the positional
// addition, strided-batched GEMMs, the axis swap, the causal softmax) runs in a whole training
// step on the device; and vit-tiny shrunk alike (patch embedding, a non-causal block). The tolerances are provisional: not yet calibrated with
// bench/parity_drift nor run on a GPU; they allow ten times the mlp's in the same mode.
std::filesystem::path corpusPath()
{
    return std::filesystem::temp_directory_path() / ("mantissa-gpu-char-gpt-" + std::to_string(::getpid()) + ".txt");
}

std::string tinyCorpus()
{
    static const std::string path = [] {
        std::atexit([] {
            std::error_code ignored;
            std::filesystem::remove(corpusPath(), ignored);
        });
        std::ofstream out(corpusPath());
        const char* const words[] = {"the ", "fox ", "jumps ", "over ", "a ", "lazy ", "dog; ", "then ", "runs.\n"};
        for (int i = 0; i < 6000; ++i)
            out << words[(i * 7 + i / 9) % 9];
        return corpusPath().string();
    }();
    return path;
}

// A transformer preset's layers with one block of 2 heads and its embedding `width` wide.
std::vector<LayerSpec> oneBlock(const std::vector<LayerSpec>& layers, std::int64_t width)
{
    std::vector<LayerSpec> out;
    bool haveBlock = false;
    for (const LayerSpec& layer : layers) {
        LayerSpec shrunk = layer;
        if (shrunk.type == LayerKind::Transformer) {
            if (haveBlock)
                continue;
            haveBlock = true;
            shrunk.heads = 2;
        }
        if (shrunk.type == LayerKind::TokenEmbedding || shrunk.type == LayerKind::PatchEmbedding)
            shrunk.units = width;
        out.push_back(shrunk);
    }
    return out;
}

RunConfig tinyCharGptConfig(PrecisionMode mode)
{
    RunConfig c = presetConfig("char-gpt");
    constexpr std::int64_t kContext = 16;
    c.precision = mode;
    c.model.input = {kContext};
    c.model.layers = oneBlock(c.model.layers, 32);
    c.data.directory = tinyCorpus();
    c.data.context = kContext;
    c.data.validationSplit = 0;
    c.data.limitTest = 64;
    c.training.batchSize = 8;
    c.training.epochs = 20;
    c.training.maxSteps = kSteps;
    c.training.threads = 0;
    return c;
}

// vit-tiny (patch embedding, positions, a non-causal block, a flattened linear classifier)
// with one block of width 32, on the synthetic data of the other presets' cases.
RunConfig tinyVitConfig(PrecisionMode mode)
{
    RunConfig c = parityConfig("vit-tiny", mode);
    c.model.layers = oneBlock(c.model.layers, 32);
    c.training.batchSize = 32;
    c.data.syntheticTrain = c.training.batchSize * 50;
    return c;
}

class CudaTransformerTrainingParity : public test::DeviceTest, public ::testing::WithParamInterface<PrecisionMode> {};

void expectSameAsCpu(const RunConfig& config)
{
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    const Trace cpu = train(config, "cpu", data);
    const Trace device = train(config, test::deviceUnderTestName(), data);
    expectSameTrajectory(cpu, device, config.precision == PrecisionMode::Fp32 ? 1e-2 : 0.1);
}

TEST_P(CudaTransformerTrainingParity, TinyCharGptLossesMatchCpu) { expectSameAsCpu(tinyCharGptConfig(GetParam())); }

TEST_P(CudaTransformerTrainingParity, TinyVitLossesMatchCpu) { expectSameAsCpu(tinyVitConfig(GetParam())); }

INSTANTIATE_TEST_SUITE_P(OneBlock, CudaTransformerTrainingParity,
                         ::testing::Values(PrecisionMode::Fp32, PrecisionMode::MixedBf16),
                         [](const ::testing::TestParamInfo<PrecisionMode>& info) {
                             std::string name = precisionModeName(info.param);
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

// The one-block transformers under the sub-16-bit recipes, every GEMM of the block quantised on
// the device (the projections, the MLP; the first and last kept under the 4-bit ones), against
// the CPU. The tolerance is the 16-bit cases' 0.1, provisional: written after the last GPU run, so not run on one yet.
INSTANTIATE_TEST_SUITE_P(Recipes, CudaTransformerTrainingParity,
                         ::testing::Values(PrecisionMode::Fp8Hybrid, PrecisionMode::Fp8Block, PrecisionMode::Mxfp8,
                                           PrecisionMode::Mxfp4, PrecisionMode::Nvfp4),
                         [](const ::testing::TestParamInfo<PrecisionMode>& info) {
                             std::string name = precisionModeName(info.param);
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

// Attention's batched products quantised too (precision.recipe.attention), on the device's
// strided operands: K along the head dimension and along the sequence.
class CudaAttentionRecipeParity : public test::DeviceTest {};

TEST_F(CudaAttentionRecipeParity, TinyCharGptWithQuantisedProductsMatchesCpu)
{
    for (const PrecisionMode mode : {PrecisionMode::Mxfp8, PrecisionMode::Nvfp4}) {
        SCOPED_TRACE(precisionModeName(mode));
        RunConfig c = tinyCharGptConfig(mode);
        c.recipe.attention = RecipeSwitch::On;
        expectSameAsCpu(c);
    }
}

// Two runs in lockstep: after every step the device run takes over the CPU run's state
// (master and working weights, optimizer state, batch-norm statistics, the loss scaler's
// state), so each of its steps starts exactly where the CPU's did and any difference is that
// one step's own.
class Lockstep {
public:
    Lockstep(Trainer& cpu, Backend& cpuBackend, Trainer& device, Backend& deviceBackend)
        : m_cpu(cpu), m_cpuBackend(cpuBackend), m_device(device), m_deviceBackend(deviceBackend)
    {
        m_cpu.addObserver(&m_cpuSide);
        m_device.addObserver(&m_deviceSide);
    }

    void run()
    {
        std::thread cpuThread([this] {
            cpu.summary = m_cpu.run();
            finish(m_cpuDone);
        });
        device.summary = m_device.run();
        finish(m_deviceDone);
        cpuThread.join();
    }

    Trace cpu, device;

private:
    struct Side final : TrainingObserver {
        Lockstep* owner;
        bool isCpu;
        Side(Lockstep* o, bool c) : owner(o), isCpu(c) {}
        void onStep(const StepRecord& r) override { isCpu ? owner->cpuStepped(r) : owner->deviceStepped(r); }
        void onEvent(const EventRecord& e) override
        {
            if (e.kind != EventKind::Overflow || !e.location)
                return;
            std::lock_guard lock(owner->m_mutex);
            (isCpu ? owner->cpu : owner->device).overflows[e.step] = *e.location;
        }
        void onNumerics(const NumericsRecord& r) override
        {
            std::lock_guard lock(owner->m_mutex);
            (isCpu ? owner->cpu : owner->device).numerics[r.step] = r;
        }
    };

    static std::vector<Tensor*> state(Model& model)
    {
        std::vector<Tensor*> tensors;
        for (Parameter* p : model.parametersInBackwardOrder()) {
            tensors.push_back(&p->master);
            if (!p->working.sharesStorageWith(p->master))
                tensors.push_back(&p->working);
            for (Tensor* t : {&p->state1, &p->state2})
                if (t->defined())
                    tensors.push_back(t);
        }
        for (auto& [name, buffer] : model.buffers())
            tensors.push_back(buffer);
        return tensors;
    }

    void finish(bool& done)
    {
        std::lock_guard lock(m_mutex);
        done = true;
        m_changed.notify_all();
    }

    // On the CPU's training thread: publish the state after this step, then wait until the
    // device has taken it (or has stopped).
    void cpuStepped(const StepRecord& r)
    {
        std::unique_lock lock(m_mutex);
        cpu.steps.push_back(r);
        m_snapshot.clear();
        for (Tensor* t : state(m_cpu.model())) {
            m_snapshot.emplace_back(static_cast<std::size_t>(t->numel()));
            m_cpuBackend.download(*t, m_snapshot.back().data());
        }
        m_cpuScaler = m_cpu.scaler().state();
        m_cpuStep = r.step;
        m_changed.notify_all();
        m_changed.wait(lock, [&] { return m_deviceStep >= r.step || m_deviceDone; });
    }

    void deviceStepped(const StepRecord& r)
    {
        std::unique_lock lock(m_mutex);
        m_changed.wait(lock, [&] { return m_cpuStep >= r.step || m_cpuDone; });
        device.steps.push_back(r);
        if (m_cpuStep == r.step) {
            const std::vector<Tensor*> tensors = state(m_device.model());
            EXPECT_EQ(tensors.size(), m_snapshot.size());
            for (std::size_t i = 0; i < tensors.size() && i < m_snapshot.size(); ++i)
                m_deviceBackend.upload(m_snapshot[i].data(), *tensors[i]);
            // The scaler too: one step's different decision must not carry into the next.
            m_device.restoreScalerState(m_cpuScaler);
        }
        m_deviceStep = r.step;
        m_changed.notify_all();
    }

    Trainer& m_cpu;
    Backend& m_cpuBackend;
    Trainer& m_device;
    Backend& m_deviceBackend;
    Side m_cpuSide{this, true}, m_deviceSide{this, false};
    std::mutex m_mutex;
    std::condition_variable m_changed;
    std::vector<std::vector<float>> m_snapshot;
    LossScalerState m_cpuScaler;
    std::int64_t m_cpuStep = 0, m_deviceStep = 0;
    bool m_cpuDone = false, m_deviceDone = false;
};

// deep-mlp's gradients span more than fp16's range. A loss scale of 2^24 that doubles again
// after every 10 good steps overflows them over and over: about 20 of 200 steps are skipped.
// Whether a step overflows hinges on the fp16 rounding of its largest gradients, and it must
// hinge the same way on the GPU.
//
// Free-running, pure fp16 cannot be compared: Adam's second moment underflows to zero in
// fp16, the updates then jump by m / epsilon, and nudging one weight in 1024 by one fp16 ulp
// after each step (cuda_training_parity's calibration) moved the loss 1% by step 9 and moved
// 10 of 11 skipped steps. So both modes run in lockstep (Lockstep): every device step starts
// from the CPU's state, its skip decision must be the CPU's, and its loss, one step's
// deviation only, within kLockstepTolerance: an fp16 forward pass whose values differ by an
// fp16 ulp (2^-11 relative) here and there moves a batch's mean loss far less than 1%.
constexpr double kLockstepTolerance = 1e-2;

// The one way the two may decide a step differently: a gradient that one backend's sum
// rounds to 65504 and the other's to infinity. A tensor-core GEMM and the CPU's sgemm add
// in different orders (and the tensor core aligns by truncation), so a sum within a few
// fp16 ulps of the overflow threshold can land on either side; no tolerance on the inputs
// can make that decision agree. The numerics lens measures every step of both runs, so such
// a step can be told apart: it is a knife edge when the backend that overflowed found no
// more than kKnifeEdgeValues non-finite values in its first non-finite tensor, and in the
// other backend that same tensor's largest value lay within 2^-7 of 65520 (the smallest
// magnitude fp16 rounds to infinity). Anything else, many values at once, or a finite side
// far from the threshold, is a real difference and fails.
constexpr std::int64_t kKnifeEdgeValues = 4;
constexpr double kFp16OverflowThreshold = 65520;
// At most this many knife edges in one run: more would mean the comparison tests nothing.
constexpr std::size_t kMaxKnifeEdges = 2;

// Empty when step `index` (0-based) is a knife edge as above, else why it is not.
std::string whyNotKnifeEdge(const Trace& overflowed, const Trace& finite, std::size_t index)
{
    const std::int64_t step = overflowed.steps[index].step;
    const auto where = overflowed.overflows.find(step);
    if (where == overflowed.overflows.end())
        return overflowed.backend + " recorded no overflow location";
    const OverflowLocation& at = where->second;
    std::ostringstream why;
    if (at.nonFiniteCount > kKnifeEdgeValues)
        why << overflowed.backend << " had " << at.nonFiniteCount << " non-finite values in " << at.tensor << "; ";
    const auto record = finite.numerics.find(step);
    if (record == finite.numerics.end())
        return why.str() + finite.backend + " has no numerics record of the step";
    const TensorNumerics* same = nullptr;
    for (const TensorNumerics& t : record->second.tensors)
        if (t.tensor == at.tensor && t.kind == at.kind)
            same = &t;
    if (!same)
        return why.str() + finite.backend + " did not measure " + at.tensor;
    const double largest = static_cast<double>(same->stats.amax) *
                           (record->second.scaledGradients ? 1.0 : static_cast<double>(record->second.lossScale));
    if (!(largest >= kFp16OverflowThreshold * (1 - 1.0 / 128)))
        why << "the largest scaled value of " << at.tensor << " on " << finite.backend << " was " << largest
            << ", not within 2^-7 of 65520";
    return why.str();
}

// whyNotKnifeEdge itself, on made-up traces (runs without a GPU): the rule must accept a
// single value on the threshold and refuse everything else.
Trace knifeEdgeTrace(const std::string& backend, bool skipped, std::int64_t nonFinite, float storedMax)
{
    Trace t;
    t.backend = backend;
    StepRecord r;
    r.step = 7;
    r.skipped = skipped;
    r.lossScale = 1024;
    t.steps.push_back(r);
    OverflowLocation at;
    at.tensor = "3.linear.input_grad";
    at.kind = TensorKind::ActivationGrad;
    at.nonFiniteCount = nonFinite;
    at.count = 4096;
    if (skipped)
        t.overflows[7] = at;
    NumericsRecord n;
    n.step = 7;
    n.lossScale = 1024;
    TensorNumerics measured;
    measured.tensor = at.tensor;
    measured.kind = at.kind;
    measured.stats.amax = storedMax / 1024; // unscaled, as the lens reports it
    n.tensors.push_back(measured);
    t.numerics[7] = n;
    return t;
}

TEST(KnifeEdge, OneValueAgainstFp16sLargestIsAKnifeEdge)
{
    EXPECT_EQ(whyNotKnifeEdge(knifeEdgeTrace("gpu", true, 1, 0), knifeEdgeTrace("cpu", false, 0, 65504), 0), "");
    EXPECT_EQ(whyNotKnifeEdge(knifeEdgeTrace("gpu", true, 4, 0), knifeEdgeTrace("cpu", false, 0, 65024), 0), "");
}

TEST(KnifeEdge, ManyValuesOrAFiniteSideFarFromTheThresholdAreNot)
{
    const Trace finiteAtMax = knifeEdgeTrace("cpu", false, 0, 65504);
    EXPECT_NE(whyNotKnifeEdge(knifeEdgeTrace("gpu", true, 5, 0), finiteAtMax, 0), "");
    EXPECT_NE(whyNotKnifeEdge(knifeEdgeTrace("gpu", true, 1, 0), knifeEdgeTrace("cpu", false, 0, 60000), 0), "");
    Trace unmeasured = finiteAtMax;
    unmeasured.numerics.clear();
    EXPECT_NE(whyNotKnifeEdge(knifeEdgeTrace("gpu", true, 1, 0), unmeasured, 0), "");
    Trace otherTensor = finiteAtMax;
    otherTensor.numerics[7].tensors[0].tensor = "4.linear.input_grad";
    EXPECT_NE(whyNotKnifeEdge(knifeEdgeTrace("gpu", true, 1, 0), otherTensor, 0), "");
    Trace unlocated = knifeEdgeTrace("gpu", true, 1, 0);
    unlocated.overflows.clear();
    EXPECT_NE(whyNotKnifeEdge(unlocated, finiteAtMax, 0), "");
}

class CudaOverflowParity : public test::DeviceTest, public ::testing::WithParamInterface<PrecisionMode> {};

TEST_P(CudaOverflowParity, DeepMlpSkipsTheSameSteps)
{
    RunConfig config = parityConfig("deep-mlp", GetParam());
    config.lossScale.type = LossScaleType::Dynamic;
    config.lossScale.initial = 16777216.0f;
    config.lossScale.growthInterval = 10;
    // Lockstep hands the device each of the CPU's states before the device's next step is
    // queued; running ahead queues that step before the previous one's record is read.
    config.training.runAhead = AutoSwitch::Off;
    // Every step measured, so that a differing skip decision can be judged (whyNotKnifeEdge).
    config.numerics.every = 1;
    const DatasetSplits data = loadDatasets(config.data, config.training.seed);
    RunConfig onCpu = config, onDevice = config;
    onCpu.training.device = "cpu";
    onDevice.training.device = test::deviceUnderTestName();
    BackendSelection cpuBackend =
        selectBackend(onCpu.training.device, CpuOptions{onCpu.training.threads, CpuKernels::Emulated});
    BackendSelection deviceBackend = selectBackend(onDevice.training.device, onDevice.training.threads);
    Trainer cpuTrainer(onCpu, *cpuBackend.backend, data);
    Trainer deviceTrainer(onDevice, *deviceBackend.backend, data);
    Lockstep lockstep(cpuTrainer, *cpuBackend.backend, deviceTrainer, *deviceBackend.backend);
    lockstep.run();
    lockstep.cpu.backend = cpuBackend.backend->name();
    lockstep.device.backend = deviceBackend.backend->name();
    // Without repeated overflows on the CPU there is nothing to compare: the setup no longer does its job.
    ASSERT_GE(skippedSteps(lockstep.cpu).size(), 10u)
        << "the CPU run skipped only " << list(skippedSteps(lockstep.cpu)) << "; raise the loss scale's growth";
    const Trace& cpu = lockstep.cpu;
    const Trace& device = lockstep.device;
    std::set<std::int64_t> knifeEdges;
    for (std::size_t i = 0; i < std::min(cpu.steps.size(), device.steps.size()); ++i) {
        if (cpu.steps[i].skipped == device.steps[i].skipped)
            continue;
        const bool deviceOverflowed = device.steps[i].skipped;
        const std::string why = deviceOverflowed ? whyNotKnifeEdge(device, cpu, i) : whyNotKnifeEdge(cpu, device, i);
        EXPECT_EQ(why, "") << "step " << cpu.steps[i].step << " skipped on "
                           << (deviceOverflowed ? device : cpu).backend << " only, and not on a knife edge";
        if (why.empty())
            knifeEdges.insert(cpu.steps[i].step);
    }
    EXPECT_LE(knifeEdges.size(), kMaxKnifeEdges) << "knife-edge steps " << list({knifeEdges.begin(), knifeEdges.end()});
    ::testing::Test::RecordProperty("knife_edge_steps", list({knifeEdges.begin(), knifeEdges.end()}));
    expectSameTrajectory(cpu, device, kLockstepTolerance, knifeEdges);
}

INSTANTIATE_TEST_SUITE_P(Modes, CudaOverflowParity, ::testing::Values(PrecisionMode::Fp16, PrecisionMode::MixedFp16),
                         [](const ::testing::TestParamInfo<PrecisionMode>& info) {
                             std::string name = precisionModeName(info.param);
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

} // namespace
