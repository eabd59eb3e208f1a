// Optimizers against hand-computed PyTorch-semantics updates, the precision of master
// weights, and every learning-rate schedule against its closed form.
#include "engine/backend/backend.h"
#include "engine/numerics/conversions.h"
#include "engine/optim/lr_schedule.h"
#include "engine/optim/optimizer.h"
#include "engine/util/check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <numbers>
#include <span>
#include <string>
#include <vector>

using namespace mantissa;

namespace {

// A parameter with fp32 master weights `w` (or 16-bit ones: `masterType`) and gradient `g`.
Parameter makeParameter(const std::vector<float>& w, const std::vector<float>& g, DType masterType = DType::F32,
                        bool decay = true)
{
    Parameter p;
    p.name = "0.linear.weight";
    const Shape shape{static_cast<std::int64_t>(w.size())};
    p.master = Tensor::fromFloats(shape, w, masterType);
    p.working = p.master; // same type: the layer computes with the master itself
    p.fp32Grad = Tensor::fromFloats(shape, g);
    p.decay = decay;
    return p;
}

void setGrad(Parameter& p, const std::vector<float>& g) { p.fp32Grad.copyFromFloats(g.data()); }

OptimizerSpec sgd(float momentum = 0, float weightDecay = 0, bool nesterov = false)
{
    OptimizerSpec s;
    s.type = OptimizerKind::Sgd;
    s.momentum = momentum;
    s.weightDecay = weightDecay;
    s.nesterov = nesterov;
    return s;
}

OptimizerSpec adam(OptimizerKind type, float weightDecay)
{
    OptimizerSpec s;
    s.type = type;
    s.lr = 0.01f;
    s.weightDecay = weightDecay;
    return s;
}

template <typename F>
std::string configErrorOf(F f)
{
    try {
        f();
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "(no ConfigError)";
}

class OptimizerTest : public ::testing::Test {
protected:
    // One update at rate `lr`, queued as the trainer queues it: the rate and Adam's corrections
    // in the step's inputs, a step whose gradients were finite, counted once it is read back.
    void step(Optimizer& opt, std::span<Parameter* const> params, float lr)
    {
        StepScalars scalars{m_backend->empty({kStepInputCount}, DType::F32),
                            m_backend->empty({kStepStateCount}, DType::F32)};
        m_backend->fill(scalars.inputs, 0.0f);
        m_backend->fill(scalars.state, 0.0f); // Skipped 0
        const AdamCorrections corrections = opt.nextCorrections();
        scalars.inputs.f32()[slot(StepInput::LearningRate)] = lr;
        scalars.inputs.f32()[slot(StepInput::AdamCorrection1)] = corrections.first;
        scalars.inputs.f32()[slot(StepInput::AdamCorrection2)] = corrections.second;
        opt.queueStep(*m_backend, params, scalars);
        opt.stepTaken();
    }

    // Runs `steps` updates of `spec` with the gradients `grads[i]` and returns the weights.
    std::vector<float> run(const OptimizerSpec& spec, Parameter& p, const std::vector<std::vector<float>>& grads,
                           float lr)
    {
        Optimizer opt(spec);
        std::vector<Parameter*> params{&p};
        opt.attach(*m_backend, params);
        for (const auto& g : grads) {
            setGrad(p, g);
            step(opt, params, lr);
        }
        EXPECT_EQ(opt.stepCount(), static_cast<std::int64_t>(grads.size()));
        return p.master.toFloats();
    }

    std::unique_ptr<Backend> m_backend = makeCpuBackend(1);
};

} // namespace

// --- SGD ----------------------------------------------------------------------------------

TEST_F(OptimizerTest, PlainSgd)
{
    Parameter p = makeParameter({1.0f, -2.0f}, {0.5f, 0.25f});
    const auto w = run(sgd(), p, {{0.5f, 0.25f}}, 0.1f);
    EXPECT_FLOAT_EQ(w[0], 0.95f);     // 1 - 0.1 * 0.5
    EXPECT_FLOAT_EQ(w[1], -2.025f);   // -2 - 0.1 * 0.25
    EXPECT_FALSE(p.state1.defined()); // no momentum, no state
}

TEST_F(OptimizerTest, SgdMomentumWithWeightDecay)
{
    // PyTorch: d = g + wd*w; buf = momentum*buf + d (buf = d at the first step); w -= lr*buf.
    // step 1: d = 0.5 + 0.01*1 = 0.51, buf = 0.51, w = 1 - 0.051 = 0.949
    // step 2: d = 0.5 + 0.01*0.949 = 0.50949, buf = 0.459 + 0.50949 = 0.96849, w = 0.852151
    Parameter p = makeParameter({1.0f}, {0});
    const auto w = run(sgd(0.9f, 0.01f), p, {{0.5f}, {0.5f}}, 0.1f);
    EXPECT_NEAR(w[0], 0.852151f, 1e-6f);
    EXPECT_NEAR(p.state1.toFloats()[0], 0.96849f, 1e-6f);
}

TEST_F(OptimizerTest, SgdNesterov)
{
    // Nesterov: the update is d + momentum*buf.
    // step 1: d = 0.51, buf = 0.51, w = 1 - 0.1*(0.51 + 0.459) = 0.9031
    // step 2: d = 0.5 + 0.01*0.9031 = 0.509031, buf = 0.968031,
    //         w = 0.9031 - 0.1*(0.509031 + 0.8712279) = 0.76507411
    Parameter p = makeParameter({1.0f}, {0});
    const auto w = run(sgd(0.9f, 0.01f, true), p, {{0.5f}, {0.5f}}, 0.1f);
    EXPECT_NEAR(w[0], 0.76507411f, 1e-6f);
}

TEST_F(OptimizerTest, NoDecayParametersSkipWeightDecay)
{
    Parameter p = makeParameter({1.0f}, {0}, DType::F32, /*decay=*/false);
    const auto w = run(sgd(0.9f, 0.5f), p, {{0.5f}}, 0.1f);
    EXPECT_FLOAT_EQ(w[0], 0.95f); // the 0.5 weight decay would have made it 0.9
}

// --- Adam and AdamW ------------------------------------------------------------------------

TEST_F(OptimizerTest, Adam)
{
    // m = b1*m + (1-b1)*g, v = b2*v + (1-b2)*g^2, w -= lr * m/(1-b1^t) / (sqrt(v/(1-b2^t)) + eps);
    // values computed in double with lr 0.01, betas (0.9, 0.999), eps 1e-8, g = 0.5 then -0.25.
    Parameter p = makeParameter({1.0f, -2.0f}, {0, 0});
    const auto w = run(adam(OptimizerKind::Adam, 0), p, {{0.5f, 0.5f}, {-0.25f, -0.25f}}, 0.01f);
    EXPECT_NEAR(w[0], 0.9873366298707846f, 1e-6f);
    EXPECT_NEAR(w[1], -2.0126633701292156f, 1e-6f);
    EXPECT_NEAR(p.state1.toFloats()[0], 0.02f, 1e-7f);       // m = 0.9*0.05 + 0.1*(-0.25)
    EXPECT_NEAR(p.state2.toFloats()[0], 0.00031225f, 3e-8f); // v = 0.999*0.00025 + 0.001*0.0625
}

TEST_F(OptimizerTest, AdamWithL2DecayAddsToTheGradient)
{
    Parameter p = makeParameter({1.0f}, {0});
    const auto w = run(adam(OptimizerKind::Adam, 0.1f), p, {{0.5f}, {-0.25f}}, 0.01f);
    EXPECT_NEAR(w[0], 0.9853191993058599f, 1e-6f); // g' = g + 0.1*w
}

TEST_F(OptimizerTest, AdamWDecouplesDecay)
{
    Parameter p = makeParameter({1.0f}, {0});
    const auto w = run(adam(OptimizerKind::AdamW, 0.1f), p, {{0.5f}, {-0.25f}}, 0.01f);
    EXPECT_NEAR(w[0], 0.9853476298705847f, 1e-6f); // w -= lr*wd*w, then the Adam step on g
}

TEST_F(OptimizerTest, StepCountDrivesBiasCorrection)
{
    // At step 1 Adam moves by ~lr whatever the gradient's size. Resumed at step 1000 with
    // fresh (zero) moments, the bias corrections are those of step 1000, not of step 1.
    Parameter a = makeParameter({1.0f}, {0.5f});
    Parameter b = makeParameter({1.0f}, {0.5f});
    Optimizer first(adam(OptimizerKind::Adam, 0)), resumed(adam(OptimizerKind::Adam, 0));
    std::vector<Parameter*> pa{&a}, pb{&b};
    first.attach(*m_backend, pa);
    resumed.attach(*m_backend, pb);
    resumed.setStepCount(999);
    step(first, pa, 0.01f);
    step(resumed, pb, 0.01f);
    EXPECT_EQ(resumed.stepCount(), 1000);
    EXPECT_NEAR(a.master.toFloats()[0], 0.99f, 1e-6f);
    const double mHat = 0.1 * 0.5 / (1 - std::pow(0.9, 1000));
    const double vHat = 0.001 * 0.25 / (1 - std::pow(0.999, 1000));
    EXPECT_NEAR(b.master.toFloats()[0], 1 - 0.01 * mHat / (std::sqrt(vHat) + 1e-8), 1e-5);
}

TEST_F(OptimizerTest, AttachAllocatesZeroStateInMasterDtype)
{
    Parameter p = makeParameter({1.0f, 2.0f, 3.0f}, {0, 0, 0}, DType::F16);
    Optimizer opt(adam(OptimizerKind::AdamW, 0));
    EXPECT_EQ(opt.stateTensorCount(), 2);
    std::vector<Parameter*> params{&p};
    opt.attach(*m_backend, params);
    for (const Tensor* t : {&p.state1, &p.state2}) {
        ASSERT_TRUE(t->defined());
        EXPECT_EQ(t->dtype(), DType::F16);
        EXPECT_EQ(t->shape(), p.master.shape());
        EXPECT_EQ(t->toFloats(), std::vector<float>(3, 0.0f));
    }
    EXPECT_EQ(Optimizer(sgd(0.9f)).stateTensorCount(), 1);
    EXPECT_EQ(Optimizer(sgd()).stateTensorCount(), 0);
}

// --- precision of the master weights -------------------------------------------------------

TEST_F(OptimizerTest, UpdateBelowHalfAnUlpVanishesInPureFp16)
{
    // Just below 1.0 fp16 values are 2^-11 apart, so an update of 1e-4 (< 2^-12) rounds away:
    // the weight never moves however many steps run. An fp32 master keeps every step.
    Parameter pure = makeParameter({1.0f}, {1.0f}, DType::F16);
    Parameter mixed = makeParameter({1.0f}, {1.0f}, DType::F32);
    mixed.working = Tensor::fromFloats(mixed.master.shape(), {1.0f}, DType::F16); // separate fp16 copy
    const std::vector<std::vector<float>> grads(10, std::vector<float>{1.0f});
    const auto pureW = run(sgd(), pure, grads, 1e-4f);
    const auto mixedW = run(sgd(), mixed, grads, 1e-4f);
    EXPECT_EQ(pureW[0], 1.0f);
    EXPECT_NEAR(mixedW[0], 0.999f, 1e-6f);
    // The fp16 working copy is refreshed from the master each step: it now shows the change
    // the pure-fp16 run lost.
    const float working = mixed.working.toFloats()[0];
    EXPECT_EQ(mixed.working.dtype(), DType::F16);
    EXPECT_EQ(working, roundToDType(mixedW[0], DType::F16));
    EXPECT_LT(working, 1.0f);
}

TEST_F(OptimizerTest, WorkingCopyRefreshedAfterEveryStep)
{
    Parameter p = makeParameter({1.0f}, {0.0f});
    p.working = Tensor::fromFloats(p.master.shape(), {1.0f}, DType::F16);
    // One step of 1e-4: the master moves, the fp16 copy rounds back to 1.
    run(sgd(), p, {{1.0f}}, 1e-4f);
    EXPECT_EQ(p.working.toFloats()[0], 1.0f);
    EXPECT_NE(p.master.toFloats()[0], 1.0f);
    // A step of 0.25 shows in fp16 exactly.
    run(sgd(), p, {{2.5f}}, 0.1f);
    EXPECT_EQ(p.working.toFloats()[0], roundToDType(p.master.toFloats()[0], DType::F16));
    EXPECT_NEAR(p.working.toFloats()[0], 0.75f, 1e-3f);
}

TEST_F(OptimizerTest, SharedWorkingCopySeesTheUpdate)
{
    Parameter p = makeParameter({1.0f}, {0.5f});
    ASSERT_TRUE(p.working.sharesStorageWith(p.master));
    run(sgd(), p, {{0.5f}}, 0.1f);
    EXPECT_FLOAT_EQ(p.working.toFloats()[0], 0.95f);
}

// --- spec validation -----------------------------------------------------------------------

TEST(OptimizerSpecValidation, BadFieldsNameThemselves)
{
    const auto message = [](OptimizerSpec s) { return configErrorOf([&] { Optimizer{s}; }); };
    OptimizerSpec s = sgd(0.9f);
    s.lr = 0;
    EXPECT_EQ(message(s).rfind("optimizer.lr:", 0), 0u) << message(s);
    s.lr = -0.1f;
    EXPECT_EQ(message(s).rfind("optimizer.lr:", 0), 0u);
    s = sgd(1.0f);
    EXPECT_EQ(message(s), "optimizer.momentum: 1 is outside [0, 1)");
    s = sgd(-0.1f);
    EXPECT_EQ(message(s).rfind("optimizer.momentum:", 0), 0u);
    s = sgd(0.0f, 0.0f, true);
    EXPECT_EQ(message(s).rfind("optimizer.nesterov:", 0), 0u);
    s = sgd(0.9f, -1.0f);
    EXPECT_EQ(message(s).rfind("optimizer.weightDecay:", 0), 0u);
    s = adam(OptimizerKind::Adam, 0);
    s.beta1 = 1.0f;
    EXPECT_EQ(message(s), "optimizer.beta1: 1 is outside [0, 1)");
    s = adam(OptimizerKind::AdamW, 0);
    s.beta2 = -0.5f;
    EXPECT_EQ(message(s).rfind("optimizer.beta2:", 0), 0u);
    s = adam(OptimizerKind::Adam, 0);
    s.epsilon = 0;
    EXPECT_EQ(message(s).rfind("optimizer.epsilon:", 0), 0u);
    s = adam(OptimizerKind::Adam, 0);
    s.lr = std::nanf("");
    EXPECT_EQ(message(s).rfind("optimizer.lr:", 0), 0u);
}

// --- schedules -------------------------------------------------------------------------------

namespace {

ScheduleSpec schedule(ScheduleKind type)
{
    ScheduleSpec s;
    s.type = type;
    return s;
}

// rate() at `step` for a 100-step run of 10 epochs.
float at(const LrSchedule& s, std::int64_t step, std::int64_t epoch = 0) { return s.rate(step, epoch, 10, 100); }

double cosineFrom(double from, double to, double pct)
{
    return to + (from - to) * (1 + std::cos(std::numbers::pi * pct)) / 2;
}

} // namespace

TEST(LrScheduleTest, Constant)
{
    const LrSchedule s(schedule(ScheduleKind::Constant), 0.1f);
    EXPECT_EQ(s.kind(), ScheduleKind::Constant);
    for (std::int64_t step : {0, 1, 50, 99, 500})
        EXPECT_FLOAT_EQ(at(s, step, step / 10), 0.1f);
}

TEST(LrScheduleTest, StepDecayAtMilestoneEpochs)
{
    ScheduleSpec spec = schedule(ScheduleKind::Step);
    spec.milestones = {2, 4};
    spec.gamma = 0.1f;
    const LrSchedule s(spec, 0.1f);
    const float expected[] = {0.1f, 0.1f, 0.01f, 0.01f, 0.001f, 0.001f};
    for (int epoch = 0; epoch < 6; ++epoch)
        EXPECT_FLOAT_EQ(at(s, epoch * 10 + 3, epoch), expected[epoch]) << "epoch " << epoch;
}

TEST(LrScheduleTest, CosineToFloor)
{
    ScheduleSpec spec = schedule(ScheduleKind::Cosine);
    spec.minLr = 0.001f;
    const LrSchedule s(spec, 0.1f);
    EXPECT_FLOAT_EQ(at(s, 0), 0.1f);
    EXPECT_FLOAT_EQ(at(s, 25), static_cast<float>(cosineFrom(0.1f, 0.001f, 0.25)));
    EXPECT_FLOAT_EQ(at(s, 50), 0.0505f);
    EXPECT_FLOAT_EQ(at(s, 100), 0.001f);
    EXPECT_FLOAT_EQ(at(s, 150), 0.001f); // past the end: stays at the floor
}

TEST(LrScheduleTest, OneCycleMatchesPyTorch)
{
    // OneCycleLR(max_lr=1, total_steps=100, pct_start=0.3): starts at 1/25, peaks at step
    // 0.3*100 - 1 = 29, ends at 1/25/1e4 at step 99.
    ScheduleSpec spec = schedule(ScheduleKind::OneCycle);
    spec.maxLr = 1.0f;
    spec.pctStart = 0.3f;
    const LrSchedule s(spec, 0.1f);
    EXPECT_FLOAT_EQ(s.peakRate(), 1.0f);
    EXPECT_FLOAT_EQ(at(s, 0), 0.04f);
    EXPECT_FLOAT_EQ(at(s, 10), static_cast<float>(cosineFrom(0.04, 1.0, 10.0 / 29.0)));
    EXPECT_FLOAT_EQ(at(s, 29), 1.0f);
    EXPECT_FLOAT_EQ(at(s, 64), static_cast<float>(cosineFrom(1.0, 4e-6, 0.5)));
    EXPECT_FLOAT_EQ(at(s, 99), 4e-6f);
    EXPECT_FLOAT_EQ(at(s, 120), 4e-6f);
    // maxLr 0 means 10x the base rate.
    spec.maxLr = 0;
    const LrSchedule tenX(spec, 0.1f);
    EXPECT_FLOAT_EQ(tenX.peakRate(), 1.0f);
    EXPECT_FLOAT_EQ(at(tenX, 29), 1.0f);
}

TEST(LrScheduleTest, WarmupMultipliesAnySchedule)
{
    ScheduleSpec spec = schedule(ScheduleKind::Constant);
    spec.warmupSteps = 10;
    const LrSchedule constant(spec, 0.1f);
    EXPECT_FLOAT_EQ(at(constant, 0), 0.01f); // the first step already moves
    EXPECT_FLOAT_EQ(at(constant, 4), 0.05f);
    EXPECT_FLOAT_EQ(at(constant, 9), 0.1f);
    EXPECT_FLOAT_EQ(at(constant, 10), 0.1f);
    spec.type = ScheduleKind::Cosine;
    const LrSchedule cosine(spec, 0.1f);
    EXPECT_FLOAT_EQ(at(cosine, 4), static_cast<float>(0.5 * cosineFrom(0.1f, 0.0, 0.04)));
    EXPECT_FLOAT_EQ(at(cosine, 30), static_cast<float>(cosineFrom(0.1f, 0.0, 0.3)));
}

TEST(LrScheduleTest, BadSpecsNameTheField)
{
    const auto message = [](const ScheduleSpec& s, float lr = 0.1f) {
        return configErrorOf([&] { LrSchedule(s, lr); });
    };
    EXPECT_EQ(message(schedule(ScheduleKind::Constant), -0.1f), "optimizer.lr: must be > 0, got -0.1");
    ScheduleSpec s = schedule(ScheduleKind::Step);
    s.gamma = 0;
    EXPECT_EQ(message(s), "schedule.gamma: must be > 0, got 0");
    s = schedule(ScheduleKind::Step);
    s.milestones = {5, 3};
    EXPECT_EQ(message(s).rfind("schedule.milestones:", 0), 0u) << message(s);
    s = schedule(ScheduleKind::Cosine);
    s.minLr = 0.5f;
    EXPECT_EQ(message(s).rfind("schedule.minLr:", 0), 0u);
    s = schedule(ScheduleKind::OneCycle);
    s.pctStart = 1.0f;
    EXPECT_EQ(message(s).rfind("schedule.pctStart:", 0), 0u);
    s = schedule(ScheduleKind::OneCycle);
    s.maxLr = -1;
    EXPECT_EQ(message(s).rfind("schedule.maxLr:", 0), 0u);
    s = schedule(ScheduleKind::Constant);
    s.warmupSteps = -5;
    EXPECT_EQ(message(s), "schedule.warmupSteps: must be >= 0, got -5");
}
