// Mixed fp16's SGD update takes a fused AVX-512 pass where the CPU has AVX-512
// (sgd_half_update.h) and sgdUpdate's blocked loop elsewhere. Both must give the bits of the
// update written out element by element here: unscale as its own multiplication, then
// d = fma(decay, w, g), b = fma(momentum, b, d), d = Nesterov ? fma(momentum, b, d) : b,
// w = fma(-lr, d, w), and the fp16 working copy rounded from the new w. The tensors are long
// enough for the update's threads and not a multiple of 16, so the fused pass's remainder
// runs through the blocked loop; the values include fp16 subnormal gradients, and masters
// whose working copy overflows to infinity.
#include "engine/backend/backend.h"
#include "engine/backend/step_scalars.h"
#include "engine/numerics/conversions.h"
#include "engine/numerics/conversions_avx512.h"
#include "engine/numerics/reference_conversions.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace mantissa;

namespace {

constexpr std::int64_t kCount = 70000 + 7;

struct State {
    Tensor master, buffer, working, scaledGrad;
};

State initialState(std::uint32_t seed)
{
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> master(kCount), buffer(kCount), grad(kCount);
    for (std::int64_t i = 0; i < kCount; ++i) {
        master[i] = i % 997 == 0 ? 70000.0f : normal(rng); // 70000 is beyond fp16's 65504
        buffer[i] = 0.1f * normal(rng);
        // Loss-scaled gradients from fp16's subnormals (2^-24) to the thousands.
        grad[i] = std::ldexp(normal(rng), static_cast<int>(i % 40) - 26);
    }
    State s{Tensor::fromFloats({kCount}, master), Tensor::fromFloats({kCount}, buffer),
            Tensor::fromFloats({kCount}, master, DType::F16), Tensor::fromFloats({kCount}, grad, DType::F16)};
    return s;
}

// The update element by element, with the reference conversions.
void referenceUpdate(State& s, const SgdSettings& settings, float lr, float invScale)
{
    for (std::int64_t i = 0; i < kCount; ++i) {
        const float g = reference::halfBitsToFloat(s.scaledGrad.u16()[i]) * invScale;
        float& w = s.master.f32()[i];
        float d = std::fma(settings.weightDecay, w, g);
        if (settings.momentum != 0.0f) {
            float& b = s.buffer.f32()[i];
            b = std::fma(settings.momentum, b, d);
            d = settings.nesterov ? std::fma(settings.momentum, b, d) : b;
        }
        w = std::fma(-lr, d, w);
        s.working.u16()[i] = reference::floatToHalfBits(w);
    }
}

// One sgdStep as the trainer queues it, the gradient left loss-scaled for the update to unscale.
void backendUpdate(Backend& backend, State& s, const SgdSettings& settings, float lr, float lossScale)
{
    OptimizerSlot parameter;
    parameter.master = &s.master;
    parameter.state1 = settings.momentum != 0.0f ? &s.buffer : nullptr;
    parameter.working = &s.working;
    parameter.scaledGrad = &s.scaledGrad;
    StepScalars scalars{backend.empty({kStepInputCount}, DType::F32), backend.empty({kStepStateCount}, DType::F32)};
    backend.fill(scalars.inputs, 0.0f);
    backend.fill(scalars.state, 0.0f); // Skipped 0
    scalars.inputs.f32()[slot(StepInput::LearningRate)] = lr;
    scalars.state.f32()[slot(StepState::LossScale)] = lossScale;
    backend.sgdStep({&parameter, 1}, settings, scalars);
}

void expectSameBits(const State& expected, const State& actual, const std::string& what)
{
    std::int64_t masters = 0, buffers = 0, workings = 0;
    for (std::int64_t i = 0; i < kCount; ++i) {
        masters += std::bit_cast<std::uint32_t>(expected.master.f32()[i]) !=
                   std::bit_cast<std::uint32_t>(actual.master.f32()[i]);
        buffers += std::bit_cast<std::uint32_t>(expected.buffer.f32()[i]) !=
                   std::bit_cast<std::uint32_t>(actual.buffer.f32()[i]);
        workings += expected.working.u16()[i] != actual.working.u16()[i];
    }
    EXPECT_EQ(masters, 0) << what;
    EXPECT_EQ(buffers, 0) << what;
    EXPECT_EQ(workings, 0) << what;
}

SgdSettings sgd(float momentum, float weightDecay, bool nesterov)
{
    SgdSettings s;
    s.momentum = momentum;
    s.weightDecay = weightDecay;
    s.nesterov = nesterov;
    return s; // fp32 masters rounded to nearest: the store's default
}

struct Avx512ConversionsAllowed {
    explicit Avx512ConversionsAllowed(bool allowed) : previous(allowAvx512Conversions(allowed)) {}
    ~Avx512ConversionsAllowed() { allowAvx512Conversions(previous); }
    bool previous;
};

} // namespace

TEST(SgdHalfUpdate, FusedAndBlockedPathsGiveTheElementByElementBits)
{
    auto backend = makeCpuBackend(2);
    const std::vector<std::pair<std::string, SgdSettings>> cases = {
        {"plain", sgd(0.0f, 0.0f, false)},
        {"momentum and decay", sgd(0.9f, 1e-4f, false)},
        {"Nesterov", sgd(0.9f, 5e-4f, true)},
    };
    for (const auto& [name, settings] : cases) {
        State expected = initialState(7);
        referenceUpdate(expected, settings, 0.05f, 1.0f / 1024);
        for (bool avx512 : {true, false}) {
            if (avx512 && !avx512::hasAvx512())
                continue; // this CPU has the blocked loop only, checked below
            const Avx512ConversionsAllowed allowed(avx512);
            State actual = initialState(7);
            backendUpdate(*backend, actual, settings, 0.05f, 1024.0f);
            expectSameBits(expected, actual, name + (avx512 ? ", AVX-512" : ", portable"));
        }
    }
    // The fixture reaches what it claims: some working copies are infinite, some gradients subnormal.
    const State s = initialState(7);
    EXPECT_EQ(s.working.u16()[0], 0x7c00);
    EXPECT_EQ(s.scaledGrad.u16()[1] & 0x7c00, 0);
}
