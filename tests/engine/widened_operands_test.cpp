// Backend::widenedForGemms: a layer that hands one 16-bit tensor to several GEMMs (a linear
// layer's output gradient, attention's dO and dS, the input the three projections share) asks
// for it once as the GEMMs read it. On the CPU's emulated path that is an exactly widened fp32
// copy, which each GEMM then reads in place instead of widening the tensor again. Nothing may
// change but the time: every product and every gradient keeps its bits. Also here: the
// whole-tensor conversions that do the widening give each element its reference value
// whatever the thread count and wherever the threads' shares end.
#include "engine/backend/backend.h"
#include "engine/backend/recording_backend.h"
#include "engine/model/layers/linear.h"
#include "engine/numerics/conversions.h"
#include "engine/numerics/reference_conversions.h"
#include "random_tensor.h"

#include <gtest/gtest.h>

#include <omp.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace mantissa;

namespace {

std::unique_ptr<Backend> cpuBackend(CpuKernels kernels = CpuKernels::Auto)
{
    return makeCpuBackend(CpuOptions{2, kernels});
}

using test_support::uploadRandom;

std::vector<std::uint32_t> bitsOf(const Tensor& t)
{
    std::vector<std::uint32_t> bits;
    for (float v : t.toFloats())
        bits.push_back(std::bit_cast<std::uint32_t>(v));
    return bits;
}

// Fails with the first differing element's index: "the same bits" is the whole claim.
void expectSameBits(const Tensor& actual, const Tensor& expected, const std::string& what)
{
    ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
    const std::vector<std::uint32_t> a = bitsOf(actual), e = bitsOf(expected);
    ASSERT_EQ(a.size(), e.size()) << what;
    for (std::size_t i = 0; i < a.size(); ++i)
        ASSERT_EQ(a[i], e[i]) << what << ": element " << i << " differs";
}

TEST(WidenedForGemms, EveryFp16CodeWidensToItsValueOnTheEmulatedPath)
{
    auto be = cpuBackend();
    Tensor codes = be->empty({65536}, DType::F16);
    for (std::uint32_t c = 0; c < 65536; ++c)
        codes.u16()[c] = static_cast<std::uint16_t>(c);
    const Tensor wide = be->widenedForGemms(codes);
    ASSERT_EQ(wide.dtype(), DType::F32);
    ASSERT_EQ(wide.numel(), codes.numel());
    for (std::uint32_t c = 0; c < 65536; ++c) {
        const float expected = reference::halfBitsToFloat(static_cast<std::uint16_t>(c));
        const float actual = wide.f32()[c];
        if (std::isnan(expected))
            ASSERT_TRUE(std::isnan(actual)) << "code 0x" << std::hex << c;
        else
            ASSERT_EQ(std::bit_cast<std::uint32_t>(actual), std::bit_cast<std::uint32_t>(expected))
                << "code 0x" << std::hex << c;
    }
}

TEST(WidenedForGemms, ATensorTheGemmsReadAsItIsComesBackItself)
{
    auto be = cpuBackend();
    const Tensor fp32 = uploadRandom(*be, {64, 3}, DType::F32, 1);
    EXPECT_EQ(be->widenedForGemms(fp32).data(), fp32.data());
    // bf16 follows the kernel plan: read as it is by native kernels, widened by the emulated ones.
    const Tensor bf16 = uploadRandom(*be, {64, 3}, DType::BF16, 2);
    const bool native = be->gemmReadType(DType::BF16) == DType::BF16;
    EXPECT_EQ(be->widenedForGemms(bf16).data() == bf16.data(), native);
    auto emulated = cpuBackend(CpuKernels::Emulated);
    const Tensor emulatedBf16 = uploadRandom(*emulated, {64, 3}, DType::BF16, 2);
    const Tensor wide = emulated->widenedForGemms(emulatedBf16);
    EXPECT_EQ(wide.dtype(), DType::F32);
    EXPECT_EQ(wide.toFloats(), emulatedBf16.toFloats());
}

// A GEMM given one operand widened, or both, writes the bits it writes from the 16-bit pair.
class WidenedOperandProducts : public ::testing::TestWithParam<DType> {};

TEST_P(WidenedOperandProducts, AreTheSixteenBitProductsBitForBit)
{
    const DType type = GetParam();
    auto be = cpuBackend(CpuKernels::Emulated);
    ASSERT_EQ(be->gemmReadType(type), DType::F32);
    const std::int64_t m = 300, n = 72, k = 130;
    const Tensor a = uploadRandom(*be, {m, k}, type, 3), b = uploadRandom(*be, {n, k}, type, 4);
    const Tensor bias = uploadRandom(*be, {n}, type, 5);
    const Tensor wa = be->widenedForGemms(a), wb = be->widenedForGemms(b);
    const std::pair<const Tensor*, const Tensor*> pairs[] = {{&wa, &b}, {&a, &wb}, {&wa, &wb}};

    Tensor expected = be->empty({m, n}, type);
    be->gemm(Transpose::No, Transpose::Yes, m, n, k, 0.75f, a, b, 0.0f, expected);
    Tensor expectedBias = be->empty({m, n}, type);
    be->gemmRowBias(Transpose::No, Transpose::Yes, m, n, k, a, b, bias, expectedBias);
    // Three products of [100, 130] by [130, 72]^T, as attention's heads are multiplied.
    const std::int64_t rows = m / 3;
    Tensor expectedBatched = be->empty({m, n}, type);
    be->gemmStridedBatched(Transpose::No, Transpose::Yes, rows, n / 3, k, 0.5f, a, rows * k, b, (n / 3) * k, 0.0f,
                           expectedBatched, rows * (n / 3), 3);
    for (auto [x, y] : pairs) {
        const std::string which = std::string(dtypeName(x->dtype())) + " x " + std::string(dtypeName(y->dtype()));
        Tensor c = be->empty({m, n}, type);
        be->gemm(Transpose::No, Transpose::Yes, m, n, k, 0.75f, *x, *y, 0.0f, c);
        expectSameBits(c, expected, "gemm, " + which);
        be->gemmRowBias(Transpose::No, Transpose::Yes, m, n, k, *x, *y, bias, c);
        expectSameBits(c, expectedBias, "gemmRowBias, " + which);
        Tensor batched = be->empty({m, n}, type);
        be->gemmStridedBatched(Transpose::No, Transpose::Yes, rows, n / 3, k, 0.5f, *x, rows * k, *y, (n / 3) * k, 0.0f,
                               batched, rows * (n / 3), 3);
        expectSameBits(batched, expectedBatched, "gemmStridedBatched, " + which);
    }
    Tensor dbias = be->empty({k}, type), expectedDbias = be->empty({k}, type);
    be->rowBiasGrad(a, expectedDbias);
    be->rowBiasGrad(wa, dbias);
    expectSameBits(dbias, expectedDbias, "rowBiasGrad");
}

INSTANTIATE_TEST_SUITE_P(EmulatedTypes, WidenedOperandProducts, ::testing::Values(DType::F16, DType::BF16),
                         [](const auto& info) { return std::string(dtypeName(info.param)); });

// A linear layer's gradients, which now read one widened output gradient, against the same
// products formed from the 16-bit tensors op by op.
TEST(WidenedForGemms, LinearGradientsAreTheOpByOpSixteenBitOnes)
{
    auto be = cpuBackend();
    const std::int64_t rows = 96, in = 40, out = 24;
    Linear layer(in, out, true, "", false);
    layer.setName("0.linear");
    layer.setComputeType(DType::F16);
    layer.createParameters(*be, DType::F32, 7);
    const Tensor x = uploadRandom(*be, {rows, in}, DType::F16, 8);
    const Tensor dy = uploadRandom(*be, {rows, out}, DType::F16, 9);
    PassState pass{*be};
    pass.training = true;
    pass.inputGradNeeded = true;
    ForwardResult forward = layer.forward(pass, x);
    const Tensor dx = layer.backward(pass, dy, forward.context.get());
    const std::vector<Parameter*> params = layer.parameters();

    Tensor dw = be->empty({out, in}, DType::F16), db = be->empty({out}, DType::F16);
    Tensor expectedDx = be->empty({rows, in}, DType::F16);
    be->gemm(Transpose::Yes, Transpose::No, out, in, rows, 1.0f, dy, x, 0.0f, dw);
    be->rowBiasGrad(dy, db);
    be->gemm(Transpose::No, Transpose::No, rows, in, out, 1.0f, dy, params[0]->working, 0.0f, expectedDx);
    expectSameBits(params[0]->grad, dw, "weight gradient");
    expectSameBits(params[1]->grad, db, "bias gradient");
    expectSameBits(dx, expectedDx, "input gradient");
}

// Captured into a graph (RecordingBackend), the widening is a recorded cast: each replay widens
// the tensor's values of that step, not the values it held at capture.
TEST(WidenedForGemms, ARecordedGraphWidensEachReplaysValues)
{
    auto be = cpuBackend();
    RecordingBackend recorder(*be);
    Tensor source = be->empty({4}, DType::F16);
    const std::vector<float> before{1, 2, 3, 4}, after{-0.5f, 65504, 0.099975586f, 6e-8f};
    be->upload(before.data(), source);
    const Tensor wide = recorder.widenedForGemms(source);
    ASSERT_EQ(wide.dtype(), DType::F32);
    EXPECT_EQ(recorder.recordedCalls(), 1U);
    be->upload(after.data(), source);
    recorder.replay();
    for (std::size_t i = 0; i < after.size(); ++i)
        EXPECT_EQ(wide.f32()[i], roundToDType(after[i], DType::F16)) << i;
}

// Sizes around the threshold for splitting a conversion across threads, shares that end inside
// a vector, and a tensor of the size of mlp's largest weight; one and two threads.
TEST(WholeTensorConversions, EveryElementIsItsReferenceValueWhereverTheSharesEnd)
{
    const int threadsBefore = omp_get_max_threads();
    for (int threads : {1, 2}) {
        omp_set_num_threads(threads);
        for (std::size_t n : {std::size_t{1}, std::size_t{32767}, std::size_t{32768}, std::size_t{32769},
                              std::size_t{100003}, std::size_t{1024 * 784 + 5}}) {
            SCOPED_TRACE(std::to_string(threads) + " threads, " + std::to_string(n) + " elements");
            std::vector<float> values(n);
            std::mt19937 rng(static_cast<std::uint32_t>(n));
            std::uniform_int_distribution<std::uint32_t> bits(0, 0xffffffffu);
            for (float& v : values) {
                v = std::bit_cast<float>(bits(rng));
                if (std::isnan(v))
                    v = 1.0f;
            }
            std::vector<std::uint16_t> half(n), brain(n);
            narrowFromFloat(values.data(), half.data(), n, DType::F16);
            narrowFromFloat(values.data(), brain.data(), n, DType::BF16);
            std::vector<float> wideHalf(n), wideBrain(n), roundedHalf = values, roundedBrain = values;
            widenToFloat(half.data(), DType::F16, wideHalf.data(), n);
            widenToFloat(brain.data(), DType::BF16, wideBrain.data(), n);
            roundThrough(roundedHalf.data(), n, DType::F16);
            roundThrough(roundedBrain.data(), n, DType::BF16);
            for (std::size_t i = 0; i < n; ++i) {
                ASSERT_EQ(half[i], reference::floatToHalfBits(values[i])) << i;
                ASSERT_EQ(brain[i], reference::floatToBFloat16Bits(values[i])) << i;
                ASSERT_EQ(std::bit_cast<std::uint32_t>(wideHalf[i]),
                          std::bit_cast<std::uint32_t>(reference::halfBitsToFloat(half[i])))
                    << i;
                ASSERT_EQ(std::bit_cast<std::uint32_t>(wideBrain[i]),
                          std::bit_cast<std::uint32_t>(reference::bfloat16BitsToFloat(brain[i])))
                    << i;
                ASSERT_EQ(std::bit_cast<std::uint32_t>(roundedHalf[i]), std::bit_cast<std::uint32_t>(wideHalf[i])) << i;
                ASSERT_EQ(std::bit_cast<std::uint32_t>(roundedBrain[i]), std::bit_cast<std::uint32_t>(wideBrain[i]))
                    << i;
            }
        }
    }
    omp_set_num_threads(threadsBefore);
}

} // namespace
