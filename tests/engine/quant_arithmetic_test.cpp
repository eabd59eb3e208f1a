// The quantiser arithmetic the CUDA kernels share with the host (engine/numerics/
// quant_arithmetic.h), run here on the host through quantizeOperandOnHost, against the CPU
// quantiser it restates: the element codec on a sweep of fp32 bit patterns and on every code,
// and whole operands (operand_quantization_cases.h: every scheme, layout and edge) bit for
// bit. The GPU test (gpu/cuda_operand_quantizer_test) holds the kernels to the same cases; this
// one proves the arithmetic without a GPU.
#include "operand_quantization_cases.h"

#include "engine/numerics/minifloat_codec.h"
#include "engine/numerics/operand_quantization.h"
#include "engine/numerics/stochastic_bits.h"
#include "engine/util/check.h"

#include <gtest/gtest.h>

#include <bit>
#include <vector>

using namespace mantissa;
using namespace mantissa::test;

namespace {

constexpr MiniFloat kElements[] = {MiniFloat::E4M3, MiniFloat::E5M2, MiniFloat::E3M2, MiniFloat::E2M3, MiniFloat::E2M1};

// The spec operandPlan builds, read back from a plan (the one place it is made).
qa::ElementSpec specOf(MiniFloat element)
{
    OperandQuantization q;
    q.format.scheme = ScalingScheme::Mx;
    q.format.element = element;
    q.format.blockSize = 32;
    q.view = {qa::OperandView::AlongRows, 1, 32, 1};
    q.grid = {1, 32, false};
    return operandPlan(q, 0.0f).element;
}

TEST(QuantArithmetic, EveryCodeDecodesAsTheCodec)
{
    for (const MiniFloat e : kElements) {
        const qa::ElementSpec spec = specOf(e);
        for (std::uint32_t code = 0; code < miniFloatFormat(e).codeCount(); ++code)
            ASSERT_TRUE(sameValue(qa::decodeCode(code, spec), decodeMiniFloat(static_cast<std::uint8_t>(code), e)))
                << enumKey(e) << " code " << code;
    }
}

// Every 65,521st fp32 bit pattern (65,552 values over all signs, exponents, subnormals and
// NaNs) and +-Inf, the largest float, the smallest subnormal and -0, to nearest even and
// stochastically, saturating as the scaled schemes do.
TEST(QuantArithmetic, EncodingMatchesTheCodecOnASweepOfFloats)
{
    for (const MiniFloat e : kElements) {
        const qa::ElementSpec spec = specOf(e);
        std::vector<std::uint32_t> patterns = {0x7f800000u, 0xff800000u, 0x7f7fffffu, 0x00000001u, 0x80000000u};
        for (std::uint64_t bits = 0; bits <= 0xffffffffull; bits += 65521)
            patterns.push_back(static_cast<std::uint32_t>(bits));
        for (const std::uint32_t bits : patterns) {
            const float x = std::bit_cast<float>(bits);
            const std::uint64_t random = stochasticBits(7, bits);
            ASSERT_EQ(qa::encodeSaturating(x, spec, false, 0),
                      encodeMiniFloatWith(x, e, Rounding::NearestEven, OverflowRule::Saturate, 0).code)
                << enumKey(e) << " " << x;
            ASSERT_EQ(qa::encodeSaturating(x, spec, true, random),
                      encodeMiniFloatWith(x, e, Rounding::Stochastic, OverflowRule::Saturate, random).code)
                << enumKey(e) << " stochastic " << x;
        }
    }
}

// Midpoints between neighbouring codes (ties) and the values just either side of them.
TEST(QuantArithmetic, TiesRoundToEvenAsTheCodec)
{
    for (const MiniFloat e : kElements) {
        const qa::ElementSpec spec = specOf(e);
        const std::uint32_t top = miniFloatFormat(e).maxFiniteMagnitudeCode();
        for (std::uint32_t code = 0; code < top; ++code) {
            const float lo = decodeMiniFloat(static_cast<std::uint8_t>(code), e);
            const float hi = decodeMiniFloat(static_cast<std::uint8_t>(code + 1), e);
            const float mid = lo + (hi - lo) / 2;
            for (const float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, hi), -mid})
                ASSERT_EQ(qa::encodeSaturating(x, spec, false, 0),
                          encodeMiniFloatWith(x, e, Rounding::NearestEven, OverflowRule::Saturate, 0).code)
                    << enumKey(e) << " " << x;
        }
    }
}

TEST(QuantArithmetic, OperandsMatchTheCpuQuantizerBitForBit)
{
    std::uint32_t seed = 1;
    for (const OperandCase& c : operandCases())
        for (const bool edges : {false, true})
            for (const bool bf16 : {false, true}) {
                const std::string what =
                    c.name + (edges ? ", edges" : ", plain") + (bf16 ? ", bf16 values" : ", fp32 values");
                const std::vector<float> values =
                    operandValues(static_cast<std::size_t>(c.layout.count()), seed++, edges, bf16);
                const CpuOperand want = cpuQuantized(c, values);
                std::vector<float> got(values.size());
                const OperandQuantizationResult r = quantizeOperandOnHost(
                    operandQuantization(c.layout, c.format, c.shape, c.delayedScale, c.counter), values, got);
                ASSERT_EQ(std::bit_cast<std::uint32_t>(r.decodeScale), std::bit_cast<std::uint32_t>(want.decodeScale))
                    << what;
                for (std::size_t i = 0; i < values.size(); ++i)
                    ASSERT_TRUE(sameValue(got[i], want.values[i]))
                        << what << ": index " << i << ", value " << values[i] << " gave " << got[i] << ", the CPU "
                        << want.values[i];
            }
}

// The delayed-scaling history needs the operand's amax: the largest finite magnitude.
TEST(QuantArithmetic, PerTensorResultCarriesTheFiniteAmax)
{
    OperandCase c = operandCases().front();
    for (const OperandCase& k : operandCases())
        if (k.name == "delayed e4m3")
            c = k;
    std::vector<float> values = {
        1.0f, -7.5f, std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity(), 2.0f, 0.0f};
    c.layout = KLayout::rows(1, 6);
    c.shape = Shape{6};
    std::vector<float> got(values.size());
    const OperandQuantizationResult r =
        quantizeOperandOnHost(operandQuantization(c.layout, c.format, c.shape, 3.5f, 0), values, got);
    EXPECT_EQ(r.amax, 7.5f);
    EXPECT_EQ(r.decodeScale, 1.0f / 3.5f);
}

// A partial block the format refuses gives the CPU quantiser's message.
TEST(QuantArithmetic, RefusesAPartialBlockWithTheCpuMessage)
{
    OperandFormat f = scaledFormat(ScalingScheme::Nvfp4, MiniFloat::E2M1, 16);
    f.format.partialBlocks = PartialBlock::Refuse;
    const KLayout layout = KLayout::rows(2, 40);
    std::vector<float> values(80, 1.0f), out(80);
    try {
        quantizeOperandOnHost(operandQuantization(layout, f, Shape{80}, 1.0f, 0), values, out);
        FAIL() << "a row of 40 in blocks of 16 was accepted";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("a row of 40 values is not a multiple of the block size 16"),
                  std::string::npos)
            << e.what();
    }
}

} // namespace
