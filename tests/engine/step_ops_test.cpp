// The step ops that keep their scalars on the device (backend.h, "the step on the device"),
// on the CPU backend: the loss as the host-valued call computes it, known answers for the
// finite check, clipping and the optimizers, the skip mark honoured by everything after it,
// and the loss-scale rule equal to LossScaler's step for step. Also the tape recorder that
// stands in for CUDA graph capture on the CPU.
#include "engine/backend/backend.h"
#include "engine/backend/recording_backend.h"
#include "engine/precision/loss_scaler.h"
#include "engine/util/check.h"

#include "random_tensor.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

using namespace mantissa;
using mantissa::test_support::randomValues;

namespace {

struct Fixture {
    std::unique_ptr<Backend> backend = makeCpuBackend(1);
    StepScalars scalars;

    Fixture()
    {
        scalars.inputs = backend->empty({kStepInputCount}, DType::F32);
        scalars.state = backend->empty({kStepStateCount}, DType::F32);
        backend->fill(scalars.inputs, 0.0f);
        backend->fill(scalars.state, 0.0f);
        setState(StepState::LossScale, 1.0f);
    }
    float state(StepState s) const { return scalars.state.f32()[slot(s)]; }
    void setState(StepState s, float v) { scalars.state.f32()[slot(s)] = v; }
    void setInput(StepInput s, float v) { scalars.inputs.f32()[slot(s)] = v; }
};

Tensor tensorOf(const std::vector<float>& values, DType dtype = DType::F32)
{
    return Tensor::fromFloats({static_cast<std::int64_t>(values.size())}, values, dtype);
}

std::uint32_t bits(float v) { return std::bit_cast<std::uint32_t>(v); }

} // namespace

TEST(StepOps, LossWritesTheMeanAndCountAndScalesTheGradientFromTheDevice)
{
    Fixture f;
    const Tensor logits = Tensor::fromFloats({4, 3}, randomValues(12, 1, 3.0f), DType::F16);
    const Tensor labels = tensorOf({0, 2, 1, 2});
    f.setState(StepState::LossScale, 1024.0f);
    Tensor dlogits = f.backend->empty({4, 3}, DType::F16);
    f.backend->softmaxCrossEntropy(logits, labels, f.scalars, dlogits);
    Tensor expected = f.backend->empty({4, 3}, DType::F16);
    const LossResult host = f.backend->softmaxCrossEntropy(logits, labels, 1024.0f, &expected);
    EXPECT_EQ(bits(f.state(StepState::Loss)), bits(host.meanLoss));
    EXPECT_EQ(f.state(StepState::Correct), static_cast<float>(host.correct));
    EXPECT_EQ(dlogits.toFloats(), expected.toFloats());
}

TEST(StepOps, FiniteCheckMarksTheStepAndNamesTheFirstBadTensorOrTheLoss)
{
    Fixture f;
    const Tensor good = tensorOf({1, -3, 2}, DType::F16);
    const Tensor bad = tensorOf({1, INFINITY, 2}, DType::F16);
    Tensor out0 = f.backend->empty({3}, DType::F32), out1 = f.backend->empty({3}, DType::F32);
    const Tensor* grads[] = {&good, &bad};
    Tensor* outs[] = {&out0, &out1};
    f.setState(StepState::LossScale, 4.0f);

    f.setState(StepState::Loss, 0.5f);
    f.backend->unscaleAndCheckFinite(grads, outs, f.scalars);
    EXPECT_EQ(f.state(StepState::Skipped), 1.0f);
    EXPECT_EQ(f.state(StepState::FirstNonFinite), 1.0f);
    EXPECT_EQ(f.state(StepState::GradAmax), INFINITY);
    EXPECT_EQ(out0.toFloats(), (std::vector<float>{0.25f, -0.75f, 0.5f}));

    const Tensor* goodOnly[] = {&good};
    Tensor* outOnly[] = {&out0};
    f.backend->unscaleAndCheckFinite(goodOnly, outOnly, f.scalars);
    EXPECT_EQ(f.state(StepState::Skipped), 0.0f);
    EXPECT_EQ(f.state(StepState::FirstNonFinite), -1.0f);
    EXPECT_EQ(f.state(StepState::GradAmax), 0.75f);

    // A non-finite loss skips the step and is blamed even when a gradient is bad too.
    f.setState(StepState::Loss, NAN);
    f.backend->unscaleAndCheckFinite(grads, outs, f.scalars);
    EXPECT_EQ(f.state(StepState::Skipped), 1.0f);
    EXPECT_EQ(f.state(StepState::FirstNonFinite), kLossNotFinite);
    f.backend->unscaleAndCheckFinite(goodOnly, outOnly, f.scalars);
    EXPECT_EQ(f.state(StepState::Skipped), 1.0f);
    EXPECT_EQ(f.state(StepState::GradAmax), INFINITY);
}

TEST(StepOps, ClipRecordsTheNormAndScalesOnlyAboveTheLimit)
{
    Fixture f;
    Tensor a = tensorOf({3, 0}), b = tensorOf({0, 4}); // norm 5
    Tensor* grads[] = {&a, &b};
    f.backend->clipGradNorm(grads, f.scalars, 10.0f);
    EXPECT_EQ(f.state(StepState::GradNorm), 5.0f);
    EXPECT_EQ(a.toFloats(), (std::vector<float>{3, 0}));
    f.backend->clipGradNorm(grads, f.scalars, 0.0f); // 0: measure only
    EXPECT_EQ(a.toFloats(), (std::vector<float>{3, 0}));
    f.backend->clipGradNorm(grads, f.scalars, 1.0f);
    EXPECT_EQ(a.toFloats()[0], 3.0f * (1.0f / 5.0f));
    EXPECT_EQ(b.toFloats()[1], 4.0f * (1.0f / 5.0f));

    f.setState(StepState::Skipped, 1.0f);
    Tensor c = tensorOf({30, 40});
    Tensor* skipped[] = {&c};
    f.backend->clipGradNorm(skipped, f.scalars, 1.0f);
    EXPECT_TRUE(std::isnan(f.state(StepState::GradNorm)));
    EXPECT_EQ(c.toFloats(), (std::vector<float>{30, 40}));
}

// With fusedNorm the CPU measures the norm while it unscales (one pass over the gradients
// fewer) and the clip uses that value: the same norm as the clip's own pass, NaN on a skipped
// step, and the factor the clip applies comes from it.
TEST(StepOps, UnscalingMeasuresTheNormTheClipThenUses)
{
    Fixture f;
    f.setState(StepState::Loss, 0.5f);
    f.setState(StepState::LossScale, 4.0f);
    const Tensor a16 = tensorOf({12, 0}, DType::F16), b16 = tensorOf({0, 16}, DType::F16); // unscaled: norm 5
    Tensor a = f.backend->empty({2}, DType::F32), b = f.backend->empty({2}, DType::F32);
    const Tensor* grads[] = {&a16, &b16};
    Tensor* outs[] = {&a, &b};
    f.backend->unscaleAndCheckFinite(grads, outs, f.scalars, true);
    EXPECT_EQ(f.state(StepState::GradNorm), 5.0f);
    f.backend->clipGradNorm(outs, f.scalars, 1.0f, true);
    EXPECT_EQ(f.state(StepState::GradNorm), 5.0f);
    EXPECT_EQ(a.toFloats()[0], 3.0f * (1.0f / 5.0f));
    EXPECT_EQ(b.toFloats()[1], 4.0f * (1.0f / 5.0f));

    // The clip reads the measured norm, not the gradients: a norm of 10 halves the factor.
    f.backend->unscaleAndCheckFinite(grads, outs, f.scalars, true);
    f.setState(StepState::GradNorm, 10.0f);
    f.backend->clipGradNorm(outs, f.scalars, 1.0f, true);
    EXPECT_EQ(a.toFloats()[0], 3.0f * (1.0f / 10.0f));

    // Many values on two threads, fp32 and bf16 gradients: the clip's own sum of squares,
    // up to the order of the double additions.
    auto two = makeCpuBackend(2);
    StepScalars scalars{two->empty({kStepInputCount}, DType::F32), two->empty({kStepStateCount}, DType::F32)};
    two->fill(scalars.inputs, 0.0f);
    two->fill(scalars.state, 0.0f);
    scalars.state.f32()[slot(StepState::LossScale)] = 8.0f;
    for (const DType type : {DType::F32, DType::BF16}) {
        const Tensor big = tensorOf(randomValues(300000, 3, 100.0f), type),
                     small = tensorOf(randomValues(1000, 4), type);
        Tensor outBig = two->empty(big.shape(), DType::F32), outSmall = two->empty(small.shape(), DType::F32);
        const Tensor* many[] = {&big, &small};
        Tensor* manyOut[] = {&outBig, &outSmall};
        two->unscaleAndCheckFinite(many, manyOut, scalars, true);
        const float fused = scalars.state.f32()[slot(StepState::GradNorm)];
        two->clipGradNorm(manyOut, scalars, 0.0f);
        const float separate = scalars.state.f32()[slot(StepState::GradNorm)];
        EXPECT_NEAR(fused, separate, 1e-6f * separate) << dtypeName(type);
        EXPECT_GT(separate, 1000.0f) << dtypeName(type); // sqrt(300000) * 100 / 8 ~ 6800
    }

    // A non-finite gradient skips the step: no norm.
    const Tensor bad = tensorOf({1, INFINITY}, DType::F16);
    const Tensor* badGrads[] = {&bad};
    Tensor* badOut[] = {&a};
    f.backend->unscaleAndCheckFinite(badGrads, badOut, f.scalars, true);
    EXPECT_TRUE(std::isnan(f.state(StepState::GradNorm)));
    f.backend->clipGradNorm(badOut, f.scalars, 1.0f, true);
    EXPECT_TRUE(std::isnan(f.state(StepState::GradNorm)));
}

TEST(StepOps, OptimizersTakeTheRateFromTheDeviceAndStandStillOnSkippedSteps)
{
    for (const bool adam : {false, true}) {
        SCOPED_TRACE(adam ? "adam" : "sgd");
        Fixture f;
        const std::vector<float> w0 = randomValues(40, 3), g0 = randomValues(40, 4);
        auto makeSlot = [&](Tensor& w, Tensor& g, Tensor& m, Tensor& v, Tensor& working) {
            w = tensorOf(w0);
            g = tensorOf(g0);
            m = tensorOf(std::vector<float>(40, 0.1f));
            v = tensorOf(std::vector<float>(40, 0.2f));
            working = f.backend->empty({40}, DType::BF16);
            return OptimizerSlot{&w, &g, &m, &v, &working, true};
        };
        Tensor w, g, m, v, working;
        const OptimizerSlot device[] = {makeSlot(w, g, m, v, working)};
        const SgdSettings sgd{0.9f, 0.01f, true, {}};
        AdamSettings adamSettings;
        adamSettings.weightDecay = 0.01f;
        const AdamCorrections c = adamCorrections(adamSettings, 7);
        f.setInput(StepInput::LearningRate, 0.125f);
        f.setInput(StepInput::AdamCorrection1, c.first);
        f.setInput(StepInput::AdamCorrection2, c.second);

        f.setState(StepState::Skipped, 1.0f);
        adam ? f.backend->adamStep(device, adamSettings, f.scalars) : f.backend->sgdStep(device, sgd, f.scalars);
        EXPECT_EQ(w.toFloats(), w0) << "a skipped step changes nothing";
        EXPECT_EQ(m.toFloats(), std::vector<float>(40, 0.1f));

        f.setState(StepState::Skipped, 0.0f);
        adam ? f.backend->adamStep(device, adamSettings, f.scalars) : f.backend->sgdStep(device, sgd, f.scalars);
        // Known answers, element by element in double: PyTorch's SGD with Nesterov momentum and
        // L2 decay, and Adam with L2 decay, at rate 0.125 (the device's input, not a host value)
        // and the corrections of step 7.
        const std::vector<float> wAfter = w.toFloats(), mAfter = m.toFloats(), vAfter = v.toFloats();
        for (std::size_t i = 0; i < w0.size(); ++i) {
            const double gi = static_cast<double>(g0[i]) + 0.01 * w0[i];
            double expectedW = 0, expectedM = 0, expectedV = 0.2f;
            if (adam) {
                expectedM = 0.9 * 0.1f + 0.1 * gi;
                expectedV = 0.999 * 0.2f + 0.001 * gi * gi;
                const double mHat = expectedM / c.first, vHat = expectedV / c.second;
                expectedW = w0[i] - 0.125 * mHat / (std::sqrt(vHat) + 1e-8);
            } else {
                expectedM = 0.9 * 0.1f + gi;
                expectedW = w0[i] - 0.125 * (gi + 0.9 * expectedM);
            }
            EXPECT_NEAR(wAfter[i], expectedW, 1e-5 * (1 + std::fabs(expectedW))) << i;
            EXPECT_NEAR(mAfter[i], expectedM, 1e-5 * (1 + std::fabs(expectedM))) << i;
            EXPECT_NEAR(vAfter[i], expectedV, 1e-5 * (1 + std::fabs(expectedV))) << i;
        }
        // The working copy is the new master rounded to its own dtype, in the same pass.
        EXPECT_EQ(working.toFloats(), Tensor::fromFloats({40}, wAfter, DType::BF16).toFloats());
    }
}

TEST(StepOps, DeviceLossScaleRuleFollowsLossScalerStepForStep)
{
    struct Case {
        const char* name;
        LossScaleSpec spec;
    };
    LossScaleSpec pytorch; // dynamic, PyTorch's defaults but a short interval so growth happens
    pytorch.type = LossScaleType::Dynamic;
    pytorch.growthInterval = 5;
    LossScaleSpec deepspeed = pytorch;
    deepspeed.hysteresis = 2;
    deepspeed.initial = 1e9f;
    deepspeed.maxScale = 2e9f;
    LossScaleSpec bounded = pytorch;
    bounded.minScale = 0.25f;
    bounded.maxScale = 64.0f;
    bounded.initial = 8.0f;
    bounded.growthFactor = 3.0f;
    bounded.backoffFactor = 0.3f;
    LossScaleSpec fixed;
    fixed.type = LossScaleType::Static;
    fixed.value = 512.0f;
    for (const Case& c :
         {Case{"pytorch", pytorch}, Case{"deepspeed", deepspeed}, Case{"bounded", bounded}, Case{"static", fixed}}) {
        SCOPED_TRACE(c.name);
        LossScaler host(c.spec, PrecisionMode::MixedFp16);
        Fixture f;
        f.setState(StepState::LossScale, host.state().scale);
        f.setState(StepState::GoodSteps, static_cast<float>(host.state().goodSteps));
        f.setState(StepState::HysteresisLeft, static_cast<float>(host.state().hysteresisLeft));
        std::mt19937 rng(11);
        int changes = 0;
        for (int step = 0; step < 4000; ++step) {
            // Bursts of overflows and long finite stretches, so every branch is taken.
            const bool overflow = (step / 300) % 2 == 0 ? rng() % 3 == 0 : rng() % 50 == 0;
            f.setState(StepState::Skipped, overflow ? 1.0f : 0.0f);
            f.backend->updateLossScale(f.scalars, host.rule());
            const ScaleUpdate u = host.update(overflow);
            changes += u.changed() ? 1 : 0;
            ASSERT_EQ(bits(f.state(StepState::ScaleUsed)), bits(u.before)) << "step " << step;
            ASSERT_EQ(bits(f.state(StepState::LossScale)), bits(u.after)) << "step " << step;
            ASSERT_EQ(f.state(StepState::GoodSteps), static_cast<float>(host.state().goodSteps));
            ASSERT_EQ(f.state(StepState::HysteresisLeft), static_cast<float>(host.state().hysteresisLeft));
        }
        if (c.spec.type == LossScaleType::Dynamic)
            EXPECT_GT(changes, 100);
        else
            EXPECT_EQ(changes, 0);
    }
}

TEST(StepOps, GrowthIntervalBeyondTheDevicesExactCountsIsAConfigError)
{
    LossScaleSpec spec;
    spec.type = LossScaleType::Dynamic;
    spec.growthInterval = (std::int64_t{1} << 24) + 1;
    EXPECT_THROW(LossScaler(spec, PrecisionMode::MixedFp16), ConfigError);
}

TEST(RecordingBackend, ReplaysItsTapeOnTheTensorsAsTheyAreThen)
{
    auto cpu = makeCpuBackend(1);
    RecordingBackend tape(*cpu);
    Tensor x = tensorOf({1, -2, 3});
    Tensor y = cpu->empty({3}, DType::F16);
    Tensor sum = cpu->empty({3}, DType::F32);
    tape.activationForward(Activation::Relu, x, y);
    tape.add(x, y, sum);
    EXPECT_EQ(tape.recordedCalls(), 2u);
    cpu->fill(sum, 7.0f);
    EXPECT_EQ(sum.toFloats(), std::vector<float>(3, 7.0f)) << "recording runs nothing";
    tape.replay();
    EXPECT_EQ(sum.toFloats(), (std::vector<float>{2, -2, 6}));
    x.copyFromFloats(std::vector<float>{-1, 5, 0}.data());
    tape.replay();
    EXPECT_EQ(sum.toFloats(), (std::vector<float>{-1, 10, 0}));
}

TEST(RecordingBackend, RefusesWhatAGraphCannotHold)
{
    auto cpu = makeCpuBackend(1);
    RecordingBackend tape(*cpu);
    Tensor t = tensorOf({1, 2});
    float host[2] = {};
    EXPECT_THROW(tape.download(t, host), UnsupportedError);
    EXPECT_THROW(tape.upload(host, t), UnsupportedError);
    const Tensor labels = tensorOf({0});
    EXPECT_THROW(tape.softmaxCrossEntropy(t, labels, 1.0f, nullptr), UnsupportedError);
    EXPECT_THROW(tape.tensorStats(t, DType::F16, 1.0f), UnsupportedError);

    std::string why;
    auto graph = cpu->captureGraph([&](Backend& b) { b.download(t, host); }, &why);
    EXPECT_EQ(graph, nullptr);
    EXPECT_NE(why.find("download"), std::string::npos) << why;
    graph = cpu->captureGraph([&](Backend& b) { b.add(t, t, t); }, &why); // out may alias a
    ASSERT_NE(graph, nullptr);
    graph->replay();
    graph->replay();
    EXPECT_EQ(t.toFloats(), (std::vector<float>{4, 8}));
}
