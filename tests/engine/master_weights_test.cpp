// bf16 master weights rounded to nearest, stochastically and with Kahan compensation, and the
// optimizer state's own dtype: the textbook case (a weight at 1.0 under 1,000 updates of 0.001),
// stochastic rounding's determinism and resumption, skipped steps, and the bytes per parameter.
#include "engine/backend/backend.h"
#include "engine/backend/update_rounding.h"
#include "engine/numerics/conversions.h"
#include "engine/optim/optimizer.h"
#include "engine/optim/parameter_bytes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <memory>
#include <vector>

using namespace mantissa;

namespace {

constexpr int kSteps = 1000;
constexpr float kUpdate = 0.001f;

OptimizerSpec plainSgd()
{
    OptimizerSpec s;
    s.type = OptimizerKind::Sgd;
    s.lr = 1.0f;
    s.momentum = 0.0f; // each step adds exactly -lr * gradient
    return s;
}

class MasterWeightsTest : public ::testing::Test {
protected:
    // `count` weights at `value` in the master dtype `masters` gives, each with gradient `grad`.
    Parameter makeParameter(std::int64_t count, float value, float grad, MasterWeights masters)
    {
        Parameter p;
        p.name = "0.linear.weight";
        const Shape shape{count};
        p.master = m_backend->empty(shape, masterDType(masters, DType::F32));
        m_backend->fill(p.master, value);
        p.working = p.master;
        p.fp32Grad = m_backend->empty(shape, DType::F32);
        m_backend->fill(p.fp32Grad, grad);
        return p;
    }

    // One update as the trainer queues it at training step `step`; `skipped` marks the step's
    // gradients non-finite.
    void step(Optimizer& opt, std::vector<Parameter*>& params, std::int64_t step, bool skipped = false)
    {
        StepScalars scalars{m_backend->empty({kStepInputCount}, DType::F32),
                            m_backend->empty({kStepStateCount}, DType::F32)};
        m_backend->fill(scalars.inputs, 0.0f);
        m_backend->fill(scalars.state, 0.0f);
        float* inputs = scalars.inputs.f32();
        const AdamCorrections corrections = opt.nextCorrections();
        inputs[slot(StepInput::LearningRate)] = opt.spec().lr;
        inputs[slot(StepInput::AdamCorrection1)] = corrections.first;
        inputs[slot(StepInput::AdamCorrection2)] = corrections.second;
        inputs[slot(StepInput::RoundingStepLow)] = static_cast<float>(step & ((1 << kRoundingStepLowBits) - 1));
        inputs[slot(StepInput::RoundingStepHigh)] = static_cast<float>(step >> kRoundingStepLowBits);
        scalars.state.f32()[slot(StepState::LossScale)] = 1.0f;
        scalars.state.f32()[slot(StepState::Skipped)] = skipped ? 1.0f : 0.0f;
        opt.queueStep(*m_backend, params, scalars);
        if (!skipped)
            opt.stepTaken();
    }

    // The textbook case: weights at 1.0 receiving kSteps updates of +0.001 (SGD, lr 1, gradient
    // -0.001), steps 1..kSteps; returns the weights.
    std::vector<float> textbook(MasterWeights masters, std::int64_t count, std::uint64_t seed = 7,
                                Parameter* keep = nullptr)
    {
        Parameter p = makeParameter(count, 1.0f, -kUpdate, masters);
        Optimizer opt(plainSgd(), {masters, OptimizerStatePrecision::Auto}, seed);
        std::vector<Parameter*> params{&p};
        opt.attach(*m_backend, params);
        for (int s = 1; s <= kSteps; ++s)
            step(opt, params, s);
        if (keep)
            *keep = p;
        return p.master.toFloats();
    }

    std::unique_ptr<Backend> m_backend = makeCpuBackend(1);
};

double mean(const std::vector<float>& v)
{
    double sum = 0;
    for (float x : v)
        sum += x;
    return sum / static_cast<double>(v.size());
}

double standardDeviation(const std::vector<float>& v)
{
    const double m = mean(v);
    double sum = 0;
    for (float x : v)
        sum += (x - m) * (x - m);
    return std::sqrt(sum / static_cast<double>(v.size() - 1));
}

} // namespace

// --- the textbook case ---------------------------------------------------------------------

TEST_F(MasterWeightsTest, Fp32MastersAddUpEveryUpdate)
{
    const auto w = textbook(MasterWeights::Fp32, 1);
    // 1,000 fp32 additions of 0.001f to a value in [1, 2): each rounds by at most 2^-24.
    EXPECT_NEAR(w[0], 2.0f, kSteps * 0x1.0p-24f);
}

TEST_F(MasterWeightsTest, Bf16ToNearestNeverMoves)
{
    // Near 1.0 bf16 values are 2^-7 = 0.0078 apart: 1.001 is nearer to 1.0 every time.
    const auto w = textbook(MasterWeights::Bf16, 1);
    EXPECT_EQ(w[0], 1.0f);
}

TEST_F(MasterWeightsTest, Bf16StochasticIsRightInExpectation)
{
    // Each step from a bf16 value w stores w + 0.001 rounded up with probability
    // p = 0.001 / ulp(w) (0.128 below 2, 0.064 above): unbiased, with variance p (1 - p) ulp^2.
    // Propagating the exact distribution of one weight over the 1,000 steps (a Markov chain on
    // the bf16 grid) gives mean 2.0000428 (0.001f is a little above 0.001) and standard
    // deviation 0.08408. Over 4,096 independent weights the sample mean has standard error
    // 0.08408 / 64 = 0.0013, and the sample deviation about 0.08408 / sqrt(2 * 4096) = 0.0009:
    // the bands below are four of those.
    constexpr std::int64_t kCount = 4096;
    constexpr double kMean = 2.0000428, kDeviation = 0.08408;
    const auto w = textbook(MasterWeights::Bf16Stochastic, kCount);
    const double m = mean(w), sd = standardDeviation(w);
    std::cout << "bf16-stochastic after " << kSteps << " updates of 0.001: mean " << m << ", sd " << sd << ", weight 0 "
              << w[0] << "\n";
    EXPECT_NEAR(m, kMean, 4 * kDeviation / 64);
    EXPECT_NEAR(sd, kDeviation, 4 * kDeviation / std::sqrt(2.0 * kCount));
    for (float x : w)
        ASSERT_EQ(x, roundToDType(x, DType::BF16)); // every stored weight is a bf16 value
}

TEST_F(MasterWeightsTest, Bf16KahanCarriesWhatRoundingLost)
{
    Parameter p;
    const auto w = textbook(MasterWeights::Bf16Kahan, 1, 7, &p);
    ASSERT_TRUE(p.compensation.defined());
    EXPECT_EQ(p.compensation.dtype(), DType::BF16);
    const float c = p.compensation.toFloats()[0];
    std::cout << "bf16-kahan after " << kSteps << " updates of 0.001: weight " << w[0] << ", compensation " << c
              << "\n";
    // Within one bf16 ulp below 2.0 (2^-7), and the weight plus what it still owes likewise:
    // the bf16 compensation's own roundings (2^-16 near 0.003) are all that drifts.
    EXPECT_NEAR(w[0], 2.0f, 0x1.0p-7f);
    EXPECT_NEAR(w[0] + c, 2.0f, 0x1.0p-7f);
    EXPECT_LT(std::fabs(c), 0x1.0p-7f); // less than the ulp it rounds against
}

// --- determinism, resumption, skipped steps -------------------------------------------------

TEST_F(MasterWeightsTest, StochasticRoundingRepeatsForASeedAndDiffersAcrossSeeds)
{
    const auto a = textbook(MasterWeights::Bf16Stochastic, 256, 11);
    const auto b = textbook(MasterWeights::Bf16Stochastic, 256, 11);
    const auto c = textbook(MasterWeights::Bf16Stochastic, 256, 12);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
}

TEST_F(MasterWeightsTest, StochasticRoundingResumesFromStoredWeightsAlone)
{
    // A second optimizer that takes over the weights at step 500 (as a run resumed from a
    // checkpoint does, with no generator state) continues with the same bits.
    const auto whole = textbook(MasterWeights::Bf16Stochastic, 256, 5);
    Parameter p = makeParameter(256, 1.0f, -kUpdate, MasterWeights::Bf16Stochastic);
    std::vector<Parameter*> params{&p};
    {
        Optimizer first(plainSgd(), {MasterWeights::Bf16Stochastic, OptimizerStatePrecision::Auto}, 5);
        first.attach(*m_backend, params);
        for (int s = 1; s <= kSteps / 2; ++s)
            step(first, params, s);
    }
    Optimizer second(plainSgd(), {MasterWeights::Bf16Stochastic, OptimizerStatePrecision::Auto}, 5);
    second.attach(*m_backend, params);
    for (int s = kSteps / 2 + 1; s <= kSteps; ++s)
        step(second, params, s);
    EXPECT_EQ(p.master.toFloats(), whole);
}

TEST_F(MasterWeightsTest, DrawsDependOnParameterAndElement)
{
    const dropout::Key a = update_rounding::stepKey(1, 10, 0);
    const dropout::Key b = update_rounding::stepKey(1, 10, 1);
    const dropout::Key c = update_rounding::stepKey(1, 11, 0);
    EXPECT_NE(update_rounding::randomBits(a, 0), update_rounding::randomBits(b, 0));
    EXPECT_NE(update_rounding::randomBits(a, 0), update_rounding::randomBits(c, 0));
    EXPECT_NE(update_rounding::randomBits(a, 0), update_rounding::randomBits(a, 1));
}

TEST_F(MasterWeightsTest, StochasticRoundingKeepsSpecialValues)
{
    using update_rounding::bf16Stochastic;
    using update_rounding::bf16Value;
    EXPECT_EQ(bf16Value(bf16Stochastic(INFINITY, 0xffffu)), INFINITY);
    EXPECT_EQ(bf16Value(bf16Stochastic(-INFINITY, 0xffffu)), -INFINITY);
    EXPECT_TRUE(std::isnan(bf16Value(bf16Stochastic(NAN, 0xffffu))));
    EXPECT_EQ(bf16Value(bf16Stochastic(1.0f, 0xffffu)), 1.0f); // a bf16 value never moves
    // 1 + 2^-9 is a quarter of the way to the next bf16 value (1 + 2^-7): up when the draw's
    // 16 bits reach the last three quarters.
    EXPECT_EQ(bf16Value(bf16Stochastic(1.0f + 0x1.0p-9f, 0xbfffu)), 1.0f);
    EXPECT_EQ(bf16Value(bf16Stochastic(1.0f + 0x1.0p-9f, 0xc000u)), 1.0f + 0x1.0p-7f);
}

TEST_F(MasterWeightsTest, SkippedStepLeavesMastersAndCompensationAlone)
{
    for (MasterWeights masters : {MasterWeights::Bf16Stochastic, MasterWeights::Bf16Kahan}) {
        Parameter p = makeParameter(64, 1.0f, -kUpdate, masters);
        Optimizer opt(plainSgd(), {masters, OptimizerStatePrecision::Auto}, 3);
        std::vector<Parameter*> params{&p};
        opt.attach(*m_backend, params);
        for (int s = 1; s <= 10; ++s)
            step(opt, params, s);
        const auto weights = p.master.toFloats();
        const auto compensation = p.compensation.defined() ? p.compensation.toFloats() : std::vector<float>{};
        step(opt, params, 11, true);
        EXPECT_EQ(p.master.toFloats(), weights) << enumKey(masters);
        if (p.compensation.defined()) {
            EXPECT_EQ(p.compensation.toFloats(), compensation);
            EXPECT_NE(compensation, std::vector<float>(64, 0.0f)); // it did hold something
        }
    }
}

// --- the optimizer state's dtype ------------------------------------------------------------

TEST_F(MasterWeightsTest, Bf16MomentsBesideFp32Masters)
{
    OptimizerSpec spec;
    spec.type = OptimizerKind::Adam;
    spec.lr = 0.01f;
    const std::vector<float> grads{0.3f, -1.7f, 2.9e-3f, 5.0f};
    const auto runAdam = [&](OptimizerStatePrecision state, Parameter& p) {
        p.master = Tensor::fromFloats({4}, {1.0f, -0.5f, 0.25f, 2.0f});
        p.working = p.master;
        p.fp32Grad = Tensor::fromFloats({4}, grads);
        Optimizer opt(spec, {MasterWeights::Auto, state});
        std::vector<Parameter*> params{&p};
        opt.attach(*m_backend, params);
        for (int s = 1; s <= 3; ++s)
            step(opt, params, s);
    };
    Parameter fp32, bf16;
    runAdam(OptimizerStatePrecision::Auto, fp32);
    runAdam(OptimizerStatePrecision::Bf16, bf16);
    EXPECT_EQ(fp32.state1.dtype(), DType::F32);
    EXPECT_EQ(bf16.state1.dtype(), DType::BF16);
    EXPECT_EQ(bf16.state2.dtype(), DType::BF16);
    EXPECT_EQ(bf16.master.dtype(), DType::F32);
    const auto m32 = fp32.state1.toFloats(), m16 = bf16.state1.toFloats();
    const auto v32 = fp32.state2.toFloats(), v16 = bf16.state2.toFloats();
    const auto w32 = fp32.master.toFloats(), w16 = bf16.master.toFloats();
    for (std::size_t i = 0; i < grads.size(); ++i) {
        // Three roundings to bf16 (relative 2^-9 each) separate the moments; Adam's step
        // m / sqrt(v) is about lr per step whatever the gradient's size, so three steps agree
        // to a few 2^-9 of 3 lr.
        EXPECT_NEAR(m16[i], m32[i], 3 * 0x1.0p-9f * std::fabs(m32[i]));
        EXPECT_NEAR(v16[i], v32[i], 3 * 0x1.0p-9f * std::fabs(v32[i]));
        EXPECT_NE(w16[i], 1e9f);
        EXPECT_NEAR(w16[i], w32[i], 3 * 0.01f * 3 * 0x1.0p-9f);
    }
    EXPECT_NE(w16, w32); // the rounding showed
}

// --- bytes per parameter --------------------------------------------------------------------

TEST(ParameterBytesTest, MastersWorkingCopyCompensationAndState)
{
    RunConfig c;
    c.precision = PrecisionMode::MixedBf16;
    c.optimizer.type = OptimizerKind::Sgd;
    c.optimizer.momentum = 0.9f;
    // fp32 master + bf16 working copy + fp32 momentum.
    EXPECT_EQ(parameterBytes(c).total(), 4u + 2u + 4u);
    EXPECT_EQ(parameterBytesText(parameterBytes(c)), "10 bytes: fp32 master 4 + bf16 working copy 2 + fp32 momentum 4");
    // bf16 masters are the working copy themselves; their momentum follows them into bf16.
    c.update.masters = MasterWeights::Bf16;
    EXPECT_EQ(parameterBytes(c).total(), 2u + 2u);
    // Kahan adds a bf16 compensation; fp32 state stays fp32 when asked.
    c.update = {MasterWeights::Bf16Kahan, OptimizerStatePrecision::Fp32};
    EXPECT_EQ(parameterBytes(c).total(), 2u + 2u + 4u);
    // Adam keeps two moments.
    c.optimizer.type = OptimizerKind::AdamW;
    c.update = {MasterWeights::Bf16Stochastic, OptimizerStatePrecision::Bf16};
    EXPECT_EQ(parameterBytesText(parameterBytes(c)), "6 bytes: bf16 master 2 + 2 x bf16 moment 2");
    // fp32 training: the master is the working copy.
    c.precision = PrecisionMode::Fp32;
    c.update = {};
    EXPECT_EQ(parameterBytes(c).total(), 4u + 2u * 4u);
    // Pure bf16: the weights are their own masters, as before these settings existed.
    c.precision = PrecisionMode::Bf16;
    EXPECT_EQ(parameterBytes(c).total(), 2u + 2u * 2u);
    c.update.masters = MasterWeights::Fp32;
    EXPECT_EQ(parameterBytes(c).total(), 4u + 2u + 2u * 4u);
}
