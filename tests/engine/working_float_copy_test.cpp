// The fp32 copy of a 16-bit working copy that the CPU optimizer keeps where the step's kernels
// widen it (Storage::floatCopy, CpuBackend::workingFloatCopy): it holds exactly the widened
// words, a GEMM reading it gives the bits of one that widens the words itself, and any later
// write to the working copy makes the kernels widen the new words instead of reading a stale
// copy.
#include "engine/backend/backend.h"

#include "random_tensor.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <vector>

using namespace mantissa;
using mantissa::test_support::randomValues;

namespace {

std::vector<std::uint32_t> bitsOf(const std::vector<float>& values)
{
    std::vector<std::uint32_t> out;
    for (float v : values)
        out.push_back(std::bit_cast<std::uint32_t>(v));
    return out;
}

// A parameter of `n` values: fp32 master, fp16 working copy, fp32 gradient.
struct Param {
    Tensor master, working, grad, momentum;
};

Param makeParam(Backend& backend, std::int64_t n, unsigned seed)
{
    Param p;
    p.master = Tensor::fromFloats({n}, randomValues(static_cast<std::size_t>(n), seed, 0.1f));
    p.working = backend.empty({n}, DType::F16);
    backend.cast(p.master, p.working);
    p.grad = Tensor::fromFloats({n}, randomValues(static_cast<std::size_t>(n), seed + 1, 1.0f));
    p.momentum = Tensor::zeros({n});
    return p;
}

StepScalars makeScalars(Backend& backend)
{
    StepScalars scalars;
    scalars.inputs = backend.empty({kStepInputCount}, DType::F32);
    scalars.state = backend.empty({kStepStateCount}, DType::F32);
    backend.fill(scalars.inputs, 0.0f);
    backend.fill(scalars.state, 0.0f);
    scalars.state.f32()[slot(StepState::LossScale)] = 1.0f;
    scalars.inputs.f32()[slot(StepInput::LearningRate)] = 0.05f;
    scalars.inputs.f32()[slot(StepInput::AdamCorrection1)] = 0.1f;
    scalars.inputs.f32()[slot(StepInput::AdamCorrection2)] = 0.001f;
    return scalars;
}

void sgd(Backend& backend, Param& p)
{
    StepScalars scalars = makeScalars(backend);
    OptimizerSlot s{&p.master, &p.grad, &p.momentum, nullptr, &p.working, true};
    backend.sgdStep({&s, 1}, {0.9f, 0.0f, false}, scalars);
}

// x [rows, n/cols] times the working copy seen as [cols, n/cols]^T, in fp16 with fp32 sums.
std::vector<float> product(Backend& backend, const Tensor& weights, std::int64_t cols)
{
    const std::int64_t k = weights.numel() / cols;
    const std::int64_t rows = 8;
    Tensor x = backend.empty({rows, k}, DType::F16);
    backend.cast(Tensor::fromFloats({rows, k}, randomValues(static_cast<std::size_t>(rows * k), 99, 1.0f)), x);
    Tensor y = backend.empty({rows, cols}, DType::F16);
    backend.gemm(Transpose::No, Transpose::Yes, rows, cols, k, 1.0f, x, weights, 0.0f, y);
    return y.toFloats();
}

// The same words in a tensor of their own, which has no float copy.
Tensor wordsOnly(Backend& backend, const Tensor& t)
{
    Tensor copy = backend.empty(t.shape(), t.dtype());
    backend.cast(t, copy);
    return copy;
}

// Large enough for the optimizer's blocks to run on both threads.
constexpr std::int64_t kValues = 256 * 1024;

} // namespace

TEST(WorkingFloatCopy, TheOptimizerKeepsExactlyTheWidenedWords)
{
    auto backend = makeCpuBackend(2);
    Param p = makeParam(*backend, kValues, 1);
    ASSERT_EQ(p.working.currentFloatCopy(), nullptr) << "a cast wrote the working copy: no float copy yet";
    sgd(*backend, p);
    const float* copy = p.working.currentFloatCopy();
    ASSERT_NE(copy, nullptr) << "mixed-fp16's working copy is widened by the emulated kernels";
    const std::vector<float> widened = p.working.toFloats();
    EXPECT_EQ(bitsOf(std::vector<float>(copy, copy + kValues)), bitsOf(widened));
}

TEST(WorkingFloatCopy, AGemmReadingTheCopyGivesTheBitsOfOneWideningTheWords)
{
    auto backend = makeCpuBackend(2);
    Param p = makeParam(*backend, kValues, 2);
    sgd(*backend, p);
    ASSERT_NE(p.working.currentFloatCopy(), nullptr);
    const Tensor plain = wordsOnly(*backend, p.working);
    ASSERT_EQ(plain.currentFloatCopy(), nullptr);
    EXPECT_EQ(bitsOf(product(*backend, p.working, 512)), bitsOf(product(*backend, plain, 512)));
}

TEST(WorkingFloatCopy, AnyLaterWriteDropsTheCopy)
{
    auto backend = makeCpuBackend(2);
    Param p = makeParam(*backend, kValues, 3);
    sgd(*backend, p);
    ASSERT_NE(p.working.currentFloatCopy(), nullptr);
    // A write the optimizer did not make (a checkpoint's load casts the masters again): the
    // kernels must read the new words, not the copy of the old ones.
    backend->cast(Tensor::fromFloats({kValues}, randomValues(kValues, 77, 0.1f)), p.working);
    EXPECT_EQ(p.working.currentFloatCopy(), nullptr);
    const Tensor plain = wordsOnly(*backend, p.working);
    EXPECT_EQ(bitsOf(product(*backend, p.working, 512)), bitsOf(product(*backend, plain, 512)));

    sgd(*backend, p);
    ASSERT_NE(p.working.currentFloatCopy(), nullptr);
    backend->fill(p.working, 0.5f);
    EXPECT_EQ(p.working.currentFloatCopy(), nullptr);
    sgd(*backend, p);
    ASSERT_NE(p.working.currentFloatCopy(), nullptr);
    p.working.u16()[0] = 0;
    EXPECT_EQ(p.working.currentFloatCopy(), nullptr) << "a write through the typed accessor";
}
