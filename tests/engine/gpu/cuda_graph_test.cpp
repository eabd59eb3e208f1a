// Graph capture (Backend::captureGraph) against eager execution. A small training step written
// out by hand (a two-layer MLP: GEMMs, bias, GELU, the loss, backward, the finite check,
// clipping, the optimizer and the loss-scale rule, every scalar in StepScalars, some steps
// queued ahead and held) runs eagerly
// on one backend and is captured once and replayed on another, from the same initial values,
// with the same batches and learning rates uploaded between steps. After every step the
// weights, their working copies, the optimizer state and the step's scalars (the loss among
// them) must be bit-identical: a replay is the same kernels on the same data, and anything a
// capture baked in that should have been read afresh (a learning rate, the loss scale, a
// descriptor array rewritten per call) shows as a difference within a few steps. The mixed
// fp16 run starts at a loss scale that overflows, so skipped steps, backoff and growth are
// replayed too.
//
// The transformer ops likewise replay as they run eagerly (TransformerGraph).
//
// Also: a body that calls download (or throws) yields no graph, a reason, and a backend that
// still works; on CUDA, a body that meets a parameter list for the first time is refused.
//
// The device is MANTISSA_TEST_DEVICE's (device_under_test.h); without one every test skips
// with the reason. With MANTISSA_TEST_DEVICE=cpu the CPU backend's tape graphs are tested.
#include "device_under_test.h"

#include "engine/backend/backend_factory.h"
#include "engine/util/check.h"

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace mantissa;
using namespace mantissa::test;

namespace {

constexpr std::int64_t kBatch = 8, kIn = 16, kHidden = 32, kClasses = 10;
constexpr int kSteps = 40;
constexpr float kMaxNorm = 1.0f;
constexpr std::uint32_t kSeed = 20240917;

struct StepConfig {
    const char* name;
    DType compute;     // activations, working copies and gradients; masters are fp32
    bool adam;         // AdamW, else SGD with momentum and weight decay
    bool dynamicScale; // the loss-scale rule on the device, from a scale that overflows fp16
};

const StepConfig kConfigs[] = {
    {"fp32Sgd", DType::F32, false, false},
    {"mixedFp16AdamDynamicScale", DType::F16, true, true},
    {"mixedBf16Sgd", DType::BF16, false, false},
};

void PrintTo(const StepConfig& c, std::ostream* os) { *os << c.name; }

const SgdSettings kSgd{0.9f, 1e-4f, false, {}};
const AdamSettings kAdam{0.9f, 0.999f, 1e-8f, 1e-2f, true, {}};

ScaleRule ruleOf(const StepConfig& c)
{
    ScaleRule rule;
    rule.dynamic = c.dynamicScale;
    rule.growthInterval = 5;
    rule.hysteresis = 2;
    return rule;
}

// The tensors of one training run that live across steps, on one backend.
struct MlpRun {
    static constexpr int kParams = 4; // W1 [in, hidden], b1, W2 [hidden, classes], b2
    StepConfig config;
    Tensor x, labels;
    std::array<Tensor, kParams> master, working, grad, grad32, m, v;
    StepScalars scalars;
    std::vector<OptimizerSlot> slots;

    MlpRun(Backend& b, const StepConfig& c) : config(c)
    {
        const std::array<Shape, kParams> shapes{Shape{kIn, kHidden}, Shape{kHidden}, Shape{kHidden, kClasses},
                                                Shape{kClasses}};
        x = b.empty({kBatch, kIn}, c.compute);
        labels = b.empty({kBatch}, DType::F32);
        for (int i = 0; i < kParams; ++i) {
            master[i] = b.empty(shapes[i], DType::F32);
            if (c.compute != DType::F32)
                working[i] = b.empty(shapes[i], c.compute);
            grad[i] = b.empty(shapes[i], c.compute);
            grad32[i] = b.empty(shapes[i], DType::F32);
            m[i] = b.empty(shapes[i], DType::F32);
            if (c.adam)
                v[i] = b.empty(shapes[i], DType::F32);
        }
        scalars = {b.empty({kStepInputCount}, DType::F32), b.empty({kStepStateCount}, DType::F32)};
        for (int i = 0; i < kParams; ++i) {
            OptimizerSlot slot;
            slot.master = &master[i];
            slot.grad = &grad32[i];
            slot.state1 = &m[i];
            slot.state2 = c.adam ? &v[i] : nullptr;
            slot.working = working[i].defined() ? &working[i] : nullptr;
            slot.decay = i % 2 == 0; // weights, not biases
            slots.push_back(slot);
        }
    }

    // The weight a layer computes with: the working copy, or the master in fp32.
    const Tensor& weight(int i) const { return working[i].defined() ? working[i] : master[i]; }

    // Initial weights, zero gradients and optimizer state, and the scaler's starting state,
    // the same on every backend (and again on the same tensors after a warm-up step).
    void reset(Backend& b)
    {
        std::mt19937 generator(kSeed);
        for (int i = 0; i < kParams; ++i) {
            std::vector<float> values(static_cast<std::size_t>(master[i].numel()));
            for (float& value : values)
                value = std::uniform_real_distribution<float>(-0.5f, 0.5f)(generator);
            b.upload(values.data(), master[i]);
            if (working[i].defined())
                b.cast(master[i], working[i]);
            for (Tensor* zeroed : {&grad[i], &grad32[i], &m[i], &v[i]})
                if (zeroed->defined())
                    b.fill(*zeroed, 0.0f);
        }
        std::vector<float> state(kStepStateCount, 0.0f);
        state[static_cast<std::size_t>(slot(StepState::LossScale))] = config.dynamicScale ? 16777216.0f : 1.0f;
        state[static_cast<std::size_t>(slot(StepState::HysteresisLeft))] = 2.0f;
        b.upload(state.data(), scalars.state);
    }

    // What the host writes before step k: the batch, the learning rate (it changes, so a
    // value baked into the graph would show), Adam's corrections for step k + 1, and every
    // fourth step queued "ahead" (held if the step before it was skipped).
    void refresh(Backend& b, int k)
    {
        std::mt19937 generator(kSeed + 1 + static_cast<std::uint32_t>(k));
        std::vector<float> xs(static_cast<std::size_t>(x.numel())), ys(static_cast<std::size_t>(kBatch));
        for (float& value : xs)
            value = std::uniform_real_distribution<float>(-1.0f, 1.0f)(generator);
        for (float& value : ys)
            value = static_cast<float>(std::uniform_int_distribution<int>(0, kClasses - 1)(generator));
        b.upload(xs.data(), x);
        b.upload(ys.data(), labels);
        std::vector<float> inputs(kStepInputCount, 0.0f);
        const auto t = static_cast<float>(k + 1);
        inputs[static_cast<std::size_t>(slot(StepInput::LearningRate))] = 0.01f * static_cast<float>(1 + k % 3);
        inputs[static_cast<std::size_t>(slot(StepInput::AdamCorrection1))] = 1.0f - std::pow(kAdam.beta1, t);
        inputs[static_cast<std::size_t>(slot(StepInput::AdamCorrection2))] = 1.0f - std::pow(kAdam.beta2, t);
        inputs[static_cast<std::size_t>(slot(StepInput::HoldIfPreviousSkipped))] = k % 4 == 3 ? 1.0f : 0.0f;
        b.upload(inputs.data(), scalars.inputs);
    }

    // One training step, queued on `b` (the backend itself, or the one a capture hands over).
    // Activations are temporaries of the step: in a graph they are its own allocations.
    void step(Backend& b)
    {
        const DType t = config.compute;
        b.beginStep(scalars);
        Tensor h = b.empty({kBatch, kHidden}, t), a = b.empty({kBatch, kHidden}, t);
        b.gemmRowBias(Transpose::No, Transpose::No, kBatch, kHidden, kIn, x, weight(0), weight(1), h);
        b.activationForward(Activation::Gelu, h, a);
        Tensor logits = b.empty({kBatch, kClasses}, t), dlogits = b.empty({kBatch, kClasses}, t);
        b.gemmRowBias(Transpose::No, Transpose::No, kBatch, kClasses, kHidden, a, weight(2), weight(3), logits);
        b.softmaxCrossEntropy(logits, labels, scalars, dlogits);

        b.gemm(Transpose::Yes, Transpose::No, kHidden, kClasses, kBatch, 1.0f, a, dlogits, 0.0f, grad[2]);
        b.rowBiasGrad(dlogits, grad[3]);
        Tensor da = b.empty({kBatch, kHidden}, t), dh = b.empty({kBatch, kHidden}, t);
        b.gemm(Transpose::No, Transpose::Yes, kBatch, kHidden, kClasses, 1.0f, dlogits, weight(2), 0.0f, da);
        b.activationBackward(Activation::Gelu, h, a, da, dh);
        b.gemm(Transpose::Yes, Transpose::No, kIn, kHidden, kBatch, 1.0f, x, dh, 0.0f, grad[0]);
        b.rowBiasGrad(dh, grad[1]);

        const std::vector<const Tensor*> grads{&grad[0], &grad[1], &grad[2], &grad[3]};
        const std::vector<Tensor*> unscaled{&grad32[0], &grad32[1], &grad32[2], &grad32[3]};
        b.unscaleAndCheckFinite(grads, unscaled, scalars);
        b.clipGradNorm(unscaled, scalars, kMaxNorm);
        if (config.adam)
            b.adamStep(slots, kAdam, scalars);
        else
            b.sgdStep(slots, kSgd, scalars);
        b.updateLossScale(scalars, ruleOf(config));
    }
};

// Every tensor a step leaves behind, as bit patterns.
struct Snapshot {
    std::vector<std::string> names;
    std::vector<std::vector<std::uint32_t>> bits;

    void add(Backend& b, const std::string& name, const Tensor& t)
    {
        std::vector<float> values(static_cast<std::size_t>(t.numel()));
        b.download(t, values.data());
        std::vector<std::uint32_t> pattern;
        pattern.reserve(values.size());
        for (float value : values)
            pattern.push_back(std::bit_cast<std::uint32_t>(value));
        names.push_back(name);
        bits.push_back(std::move(pattern));
    }

    float state(StepState which) const
    {
        return std::bit_cast<float>(bits.front()[static_cast<std::size_t>(slot(which))]);
    }
};

Snapshot snapshot(Backend& b, const MlpRun& run)
{
    Snapshot s;
    s.add(b, "state", run.scalars.state); // first: Snapshot::state reads it
    for (int i = 0; i < MlpRun::kParams; ++i) {
        const std::string p = "parameter " + std::to_string(i);
        s.add(b, p + " master", run.master[i]);
        if (run.working[i].defined())
            s.add(b, p + " working copy", run.working[i]);
        s.add(b, p + " state1", run.m[i]);
        if (run.v[i].defined())
            s.add(b, p + " state2", run.v[i]);
        s.add(b, p + " fp32 gradient", run.grad32[i]);
    }
    return s;
}

// The first difference between two snapshots, or "" when they are bit-identical.
std::string firstDifference(const Snapshot& eager, const Snapshot& replayed)
{
    for (std::size_t t = 0; t < eager.bits.size(); ++t) {
        for (std::size_t i = 0; i < eager.bits[t].size(); ++i) {
            if (eager.bits[t][i] != replayed.bits[t][i])
                return eager.names[t] + "[" + std::to_string(i) + "]: eager " +
                       std::to_string(std::bit_cast<float>(eager.bits[t][i])) + ", replayed " +
                       std::to_string(std::bit_cast<float>(replayed.bits[t][i]));
        }
    }
    return {};
}

// Two backends of the device under test: one runs eagerly, the other replays a graph.
class GraphTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        try {
            m_eager = selectBackend(deviceUnderTestName(), 1).backend;
            m_graphed = selectBackend(deviceUnderTestName(), 1).backend;
        } catch (const ResourceError& e) {
            GTEST_SKIP() << e.what();
        }
    }
    Backend& eager() { return *m_eager; }
    Backend& graphed() { return *m_graphed; }

private:
    std::unique_ptr<Backend> m_eager, m_graphed;
};

class CudaGraphStep : public GraphTest, public ::testing::WithParamInterface<StepConfig> {};

TEST_P(CudaGraphStep, ReplaysMatchEagerStepsBitForBit)
{
    const StepConfig& config = GetParam();
    MlpRun eagerRun(eager(), config), graphRun(graphed(), config);
    eagerRun.reset(eager());

    // One eager step first, on the tensors the graph will use: it finds cuDNN and cuBLAS
    // algorithms and puts the descriptor arrays on the device. Then back to the start.
    graphRun.reset(graphed());
    graphRun.refresh(graphed(), 0);
    graphRun.step(graphed());
    graphRun.reset(graphed());
    std::string why;
    const std::unique_ptr<StepGraph> graph = graphed().captureGraph([&](Backend& b) { graphRun.step(b); }, &why);
    ASSERT_NE(graph, nullptr) << graphed().name() << ": " << why;
    // Capturing runs nothing.
    ASSERT_EQ(firstDifference(snapshot(eager(), eagerRun), snapshot(graphed(), graphRun)), "")
        << "the capture changed the tensors";

    const Snapshot initial = snapshot(eager(), eagerRun);
    int skipped = 0;
    for (int k = 0; k < kSteps; ++k) {
        eagerRun.refresh(eager(), k);
        eagerRun.step(eager());
        graphRun.refresh(graphed(), k);
        graph->replay();
        const Snapshot expected = snapshot(eager(), eagerRun);
        const Snapshot actual = snapshot(graphed(), graphRun);
        ASSERT_EQ(firstDifference(expected, actual), "") << config.name << ", step " << k;
        skipped += expected.state(StepState::Skipped) != 0.0f ? 1 : 0;
    }
    RecordProperty("skipped steps", skipped);
    // The steps did train, and the dynamic run went through overflows and finite steps alike.
    EXPECT_NE(firstDifference(initial, snapshot(eager(), eagerRun)), "") << "the weights never changed";
    if (config.dynamicScale) {
        EXPECT_GT(skipped, 0);
        EXPECT_LT(skipped, kSteps);
    } else {
        EXPECT_EQ(skipped, 0);
    }
}

INSTANTIATE_TEST_SUITE_P(Configs, CudaGraphStep, ::testing::ValuesIn(kConfigs),
                         [](const ::testing::TestParamInfo<StepConfig>& info) { return info.param.name; });

// The transformer ops (embedding, positions, layer norm, the head swap, the attention
// products and the causal softmax in fp32 and in fp16 arithmetic, and their backward ops) on
// tensors made before the capture, with new token ids and gradients uploaded before every
// step: a replay must write what the same ops write eagerly, bit for bit.
struct TransformerOps {
    static constexpr std::int64_t kSeqs = 2, kTokens = 8, kHeads = 2, kHeadDim = 4, kWidth = kHeads * kHeadDim,
                                  kVocab = 11, kRows = kSeqs * kTokens, kPlanes = kSeqs * kHeads;
    DType type;
    Tensor ids, table, positions, gain, bias, embedded, x, y, mean, invStd, heads, scores, probs, probs16, context;
    Tensor dy, dprobs, dscores, dx, dgain, dbias, dtable, dpositions;

    TransformerOps(Backend& b, DType t) : type(t)
    {
        ids = b.empty({kRows}, DType::F32);
        table = upload(b, {kVocab, kWidth}, t, 1);
        positions = upload(b, {kTokens * kWidth}, t, 2);
        gain = upload(b, {kWidth}, DType::F32, 3);
        bias = upload(b, {kWidth}, DType::F32, 4);
        for (Tensor* out : {&embedded, &x, &y, &heads, &dy, &dx})
            *out = b.empty({kRows, kWidth}, t);
        mean = b.empty({kRows}, DType::F32);
        invStd = b.empty({kRows}, DType::F32);
        for (Tensor* out : {&scores, &probs, &probs16, &dprobs, &dscores})
            *out = b.empty({kPlanes, kTokens, kTokens}, t);
        context = b.empty({kPlanes, kTokens, kHeadDim}, t);
        dgain = b.empty({kWidth}, DType::F32);
        dbias = b.empty({kWidth}, DType::F32);
        dtable = b.empty({kVocab, kWidth}, t);
        dpositions = b.empty({kTokens * kWidth}, t);
    }

    static Tensor upload(Backend& b, const Shape& shape, DType t, std::uint32_t seed)
    {
        Tensor out = b.empty(shape, t);
        draw(b, out, seed);
        return out;
    }

    // New values into the same tensor: the graph keeps its address.
    static void draw(Backend& b, Tensor& out, std::uint32_t seed)
    {
        std::mt19937 generator(kSeed + seed);
        std::uniform_real_distribution<float> uniform(-1, 1);
        std::vector<float> values(static_cast<std::size_t>(out.numel()));
        for (float& v : values)
            v = uniform(generator);
        b.upload(values.data(), out);
    }

    void refresh(Backend& b, int k)
    {
        std::mt19937 generator(kSeed + 100 + static_cast<std::uint32_t>(k));
        std::vector<float> tokens(static_cast<std::size_t>(kRows));
        for (float& id : tokens)
            id = static_cast<float>(std::uniform_int_distribution<int>(0, kVocab - 1)(generator));
        b.upload(tokens.data(), ids);
        draw(b, dy, 200 + static_cast<std::uint32_t>(k));
        draw(b, dprobs, 300 + static_cast<std::uint32_t>(k));
    }

    void step(Backend& b)
    {
        b.embeddingForward(ids, table, embedded);
        b.addBroadcast(embedded, positions, x, kTokens * kWidth);
        b.rowNormForward(RowNormKind::LayerNorm, x, gain, &bias, y, mean, invStd, 1e-5f, DType::F32);
        b.swapAxes(y, heads, kSeqs, kTokens, kHeads, kHeadDim);
        b.gemmStridedBatched(Transpose::No, Transpose::Yes, kTokens, kTokens, kHeadDim, 0.5f, heads, kTokens * kHeadDim,
                             heads, kTokens * kHeadDim, 0.0f, scores, kTokens * kTokens, kPlanes);
        b.softmaxForward(scores, probs, kTokens, kTokens, true, DType::F32);
        b.softmaxForward(scores, probs16, kTokens, kTokens, true, DType::F16);
        b.gemmStridedBatched(Transpose::No, Transpose::No, kTokens, kHeadDim, kTokens, 1.0f, probs, kTokens * kTokens,
                             heads, kTokens * kHeadDim, 0.0f, context, kTokens * kHeadDim, kPlanes);
        b.softmaxBackward(probs, dprobs, dscores, kTokens);
        b.rowNormBackward(RowNormKind::LayerNorm, x, dy, gain, mean, invStd, dx, dgain, &dbias);
        b.embeddingBackward(ids, dx, dtable, false);
        b.addBroadcastBackward(dx, dpositions, kTokens * kWidth);
    }

    Snapshot snapshot(Backend& b) const
    {
        Snapshot s;
        const std::pair<const char*, const Tensor*> outputs[] = {{"x", &x},
                                                                 {"y", &y},
                                                                 {"mean", &mean},
                                                                 {"invStd", &invStd},
                                                                 {"scores", &scores},
                                                                 {"probs", &probs},
                                                                 {"probs16", &probs16},
                                                                 {"context", &context},
                                                                 {"dscores", &dscores},
                                                                 {"dx", &dx},
                                                                 {"dgain", &dgain},
                                                                 {"dbias", &dbias},
                                                                 {"dtable", &dtable},
                                                                 {"dpositions", &dpositions}};
        for (const auto& [name, t] : outputs)
            s.add(b, name, *t);
        return s;
    }
};

class TransformerGraph : public GraphTest, public ::testing::WithParamInterface<DType> {};

TEST_P(TransformerGraph, ReplaysMatchEagerOpsBitForBit)
{
    TransformerOps eagerOps(eager(), GetParam()), graphOps(graphed(), GetParam());
    // One eager step first, as a trainer runs one before it captures.
    graphOps.refresh(graphed(), 0);
    graphOps.step(graphed());
    std::string why;
    const std::unique_ptr<StepGraph> graph = graphed().captureGraph([&](Backend& b) { graphOps.step(b); }, &why);
    ASSERT_NE(graph, nullptr) << graphed().name() << ": " << why;
    for (int k = 1; k <= 4; ++k) {
        eagerOps.refresh(eager(), k);
        eagerOps.step(eager());
        graphOps.refresh(graphed(), k);
        graph->replay();
        ASSERT_EQ(firstDifference(eagerOps.snapshot(eager()), graphOps.snapshot(graphed())), "") << "step " << k;
    }
}

INSTANTIATE_TEST_SUITE_P(Types, TransformerGraph, ::testing::Values(DType::F32, DType::F16, DType::BF16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                             return std::string(dtypeName(info.param));
                         });

std::vector<float> contents(Backend& b, const Tensor& t)
{
    std::vector<float> values(static_cast<std::size_t>(t.numel()));
    b.download(t, values.data());
    return values;
}

TEST_F(GraphTest, DownloadInTheBodyFailsTheCaptureAndLeavesTheBackendUsable)
{
    Backend& b = graphed();
    Tensor t = b.empty({16}, DType::F32);
    b.fill(t, 2.0f);
    std::string why;
    const std::unique_ptr<StepGraph> refused = b.captureGraph(
        [&t](Backend& recording) {
            recording.fill(t, 3.0f);
            std::vector<float> host(16);
            recording.download(t, host.data());
        },
        &why);
    EXPECT_EQ(refused, nullptr);
    EXPECT_FALSE(why.empty()) << "no reason given";
    RecordProperty("why", why);

    // Nothing of the failed body ran, eager work runs, and the next capture succeeds.
    EXPECT_EQ(contents(b, t), std::vector<float>(16, 2.0f));
    b.fill(t, 5.0f);
    EXPECT_EQ(contents(b, t), std::vector<float>(16, 5.0f));
    why.clear();
    const std::unique_ptr<StepGraph> graph =
        b.captureGraph([&t](Backend& recording) { recording.fill(t, 7.0f); }, &why);
    ASSERT_NE(graph, nullptr) << why;
    EXPECT_EQ(contents(b, t), std::vector<float>(16, 5.0f));
    graph->replay();
    EXPECT_EQ(contents(b, t), std::vector<float>(16, 7.0f));
}

TEST_F(GraphTest, AnErrorInTheBodyFailsTheCaptureWithItsMessage)
{
    Backend& b = graphed();
    Tensor t = b.empty({4}, DType::F32);
    b.fill(t, 1.0f);
    std::string why;
    const std::unique_ptr<StepGraph> refused = b.captureGraph(
        [&t](Backend& recording) {
            Tensor temporary = recording.empty({4}, DType::F32);
            recording.fill(temporary, 9.0f);
            recording.add(t, temporary, t);
            throw ConfigError("layer 3 refuses to be recorded");
        },
        &why);
    EXPECT_EQ(refused, nullptr);
    EXPECT_NE(why.find("layer 3 refuses to be recorded"), std::string::npos) << why;
    EXPECT_EQ(contents(b, t), std::vector<float>(4, 1.0f));
}

TEST_F(GraphTest, CudaRefusesAParameterListFirstMetDuringTheCapture)
{
    Backend& b = graphed();
    if (b.device().kind != DeviceKind::Cuda)
        GTEST_SKIP() << b.name() << " keeps no device copies of parameter lists";
    Tensor w = b.empty({8}, DType::F32), g = b.empty({8}, DType::F32);
    b.fill(w, 1.0f);
    b.fill(g, 0.5f);
    OptimizerSlot slot;
    slot.master = &w;
    slot.grad = &g;
    const std::vector<OptimizerSlot> slots{slot};
    StepScalars scalars{b.empty({kStepInputCount}, DType::F32), b.empty({kStepStateCount}, DType::F32)};
    b.fill(scalars.inputs, 0.1f);
    b.fill(scalars.state, 0.0f);
    std::string why;
    EXPECT_EQ(b.captureGraph([&](Backend& recording) { recording.sgdStep(slots, SgdSettings{}, scalars); }, &why),
              nullptr);
    EXPECT_NE(why.find("run the step once before capturing"), std::string::npos) << why;

    // Met once eagerly, the same list captures, and replays read the learning rate afresh.
    b.sgdStep(slots, SgdSettings{}, scalars); // w = 1 - 0.1 * 0.5
    why.clear();
    const std::unique_ptr<StepGraph> graph =
        b.captureGraph([&](Backend& recording) { recording.sgdStep(slots, SgdSettings{}, scalars); }, &why);
    ASSERT_NE(graph, nullptr) << why;
    b.fill(scalars.inputs, 1.0f);
    graph->replay(); // w = 0.95 - 1 * 0.5
    EXPECT_EQ(contents(b, w), std::vector<float>(8, 0.45f));
}

} // namespace
