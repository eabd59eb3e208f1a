#pragma once
// The operands the device quantiser is held to the CPU quantiser on, shared by the host test of
// the shared arithmetic (quant_arithmetic_test) and the GPU test of the kernels
// (gpu/cuda_operand_quantizer_test): every scheme a recipe uses (per tensor, current and
// delayed; 1x128 and 128x128 fp32 scales; MX with each element and scale rule; NVFP4 in 1x16
// blocks and 16x16 tiles), every layout a layer hands over (K along rows, down columns,
// across a convolution's batch and pixels), rounding to nearest even and stochastically, on
// values with and without the edges: runs of zeros (all-zero blocks), fp32 subnormals, values
// far beyond every format's range, NaN and Inf.
#include "engine/model/gemm_inputs.h"
#include "engine/numerics/conversions.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace mantissa::test {

struct OperandCase {
    std::string name;
    OperandFormat format;
    KLayout layout;
    Shape shape;
    float delayedScale = 1.0f;
    std::uint64_t counter = 0;
};

inline OperandFormat scaledFormat(ScalingScheme scheme, MiniFloat element, std::size_t block, MxScaleRule rule = {},
                                  bool stochastic = false)
{
    OperandFormat f;
    f.format.scheme = scheme;
    f.format.element = element;
    f.format.blockSize = block;
    f.format.scaleRule = rule;
    f.format.partialBlocks = PartialBlock::Pad;
    f.format.encoding.rounding = stochastic ? Rounding::Stochastic : Rounding::NearestEven;
    f.format.encoding.seed = 20240917;
    return f;
}

// The layouts the layers hand over (linear.cpp, conv2d.cpp), with K not a multiple of every
// block size so that the last blocks are short (padding).
struct LayoutCase {
    const char* name;
    KLayout layout;
};
inline std::vector<LayoutCase> operandLayouts()
{
    return {
        {"rows", KLayout::rows(6, 200)}, {"columns", KLayout::along(2, 70, 24)}, {"around", KLayout::around(3, 5, 50)}};
}

inline std::vector<OperandCase> operandCases()
{
    std::vector<OperandCase> cases;
    const auto add = [&](std::string name, OperandFormat f, const KLayout& l, Shape shape = {}, float delayed = 1.0f) {
        if (shape.rank() == 0)
            shape = Shape{l.count()};
        cases.push_back({std::move(name), f, l, shape, delayed, 0x1234u + cases.size()});
    };
    const MiniFloat mxElements[] = {MiniFloat::E4M3, MiniFloat::E5M2, MiniFloat::E3M2, MiniFloat::E2M3,
                                    MiniFloat::E2M1};
    const MxScaleRule rules[] = {MxScaleRule::Floor, MxScaleRule::Ceil, MxScaleRule::RCeil};
    for (const LayoutCase& l : operandLayouts()) {
        const std::string at = std::string(" ") + l.name;
        for (const MiniFloat e : mxElements)
            for (const MxScaleRule r : rules)
                add("mx " + std::string(enumKey(e)) + " " + std::string(enumKey(r)) + at,
                    scaledFormat(ScalingScheme::Mx, e, 32, r), l.layout);
        add("mx e2m1 stochastic" + at, scaledFormat(ScalingScheme::Mx, MiniFloat::E2M1, 32, {}, true), l.layout);
        for (const MiniFloat e : {MiniFloat::E4M3, MiniFloat::E5M2})
            add("1x128 " + std::string(enumKey(e)) + at, scaledFormat(ScalingScheme::Fp32Blocks, e, 128), l.layout);
        OperandFormat pow2 = scaledFormat(ScalingScheme::Fp32Blocks, MiniFloat::E4M3, 128);
        pow2.format.powerOfTwoScales = true;
        add("1x128 e4m3 pow2" + at, pow2, l.layout);
        add("1x128 e5m2 stochastic" + at, scaledFormat(ScalingScheme::Fp32Blocks, MiniFloat::E5M2, 128, {}, true),
            l.layout);
        add("nvfp4" + at, scaledFormat(ScalingScheme::Nvfp4, MiniFloat::E2M1, 16), l.layout);
        add("nvfp4 stochastic" + at, scaledFormat(ScalingScheme::Nvfp4, MiniFloat::E2M1, 16, {}, true), l.layout);
    }
    // Per tensor: the layout does not matter; the elements come back with the decode scale.
    const KLayout flat = KLayout::rows(12, 100);
    for (const MiniFloat e : {MiniFloat::E4M3, MiniFloat::E5M2})
        add("tensor " + std::string(enumKey(e)), scaledFormat(ScalingScheme::PerTensor, e, 0), flat);
    OperandFormat pow2 = scaledFormat(ScalingScheme::PerTensor, MiniFloat::E4M3, 0);
    pow2.format.powerOfTwoScales = true;
    add("tensor e4m3 pow2", pow2, flat);
    add("tensor e5m2 stochastic", scaledFormat(ScalingScheme::PerTensor, MiniFloat::E5M2, 0, {}, true), flat);
    OperandFormat delayed = scaledFormat(ScalingScheme::PerTensor, MiniFloat::E4M3, 0);
    delayed.delayed = true;
    add("delayed e4m3", delayed, flat, {}, 3.5f);
    add("delayed e4m3 scale 1", delayed, flat, {}, 1.0f); // the overflow boundary 448/464/480 as it is
    OperandFormat delayedSr = scaledFormat(ScalingScheme::PerTensor, MiniFloat::E5M2, 0, {}, true);
    delayedSr.delayed = true; // delayed scaling rounds to nearest even whatever the format says
    add("delayed e5m2 (stochastic asked)", delayedSr, flat, {}, 0.25f);
    // DeepSeek-V3's 128x128 weight blocks over [out, rest], partial at both edges.
    OperandFormat tiles = scaledFormat(ScalingScheme::PerTensor, MiniFloat::E4M3, 0);
    tiles.tile2d = 128;
    add("128x128 linear", tiles, KLayout::rows(200, 300), Shape{200, 300});
    add("128x128 conv", tiles, KLayout::along(130, 20, 9), Shape{130, 20, 3, 3});
    // NVFP4's 16x16 weight tiles: a linear weight and a convolution's (one matrix per tap).
    OperandFormat nvTiles = scaledFormat(ScalingScheme::Nvfp4, MiniFloat::E2M1, 16);
    nvTiles.format.blockRows = 16;
    nvTiles.format.partialBlocks = PartialBlock::Refuse;
    add("nvfp4 16x16 linear", nvTiles, KLayout::rows(48, 64), Shape{48, 64});
    add("nvfp4 16x16 conv", nvTiles, KLayout::along(32, 48, 9), Shape{32, 48, 3, 3});
    return cases;
}

// Values spread over 2^-30 .. 2^12 with signs. With `edges`: a run of 160 zeros (whole zero
// blocks in every layout), fp32 subnormals, values beyond every format (1e30, the largest
// float), values on E4M3's overflow boundary, and one NaN and one Inf.
inline std::vector<float> operandValues(std::size_t n, std::uint32_t seed, bool edges, bool bf16)
{
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v)
        x = normal(gen) * std::exp2(std::floor(uniform(gen) * 42.0f) - 30.0f);
    if (edges) {
        for (std::size_t i = n / 3; i < n / 3 + 160 && i < n; ++i)
            v[i] = 0.0f;
        const float specials[] = {1e-40f,
                                  -3e-42f,
                                  1e-45f,
                                  1e30f,
                                  -std::numeric_limits<float>::max(),
                                  449.0f,
                                  464.0f,
                                  -465.0f,
                                  480.0f,
                                  57344.0f,
                                  61440.0f,
                                  6.0f,
                                  7.0f,
                                  -0.0f,
                                  std::numeric_limits<float>::quiet_NaN(),
                                  std::numeric_limits<float>::infinity()};
        std::size_t at = 7;
        for (const float s : specials) {
            v[at % n] = s;
            at += 97;
        }
    }
    if (bf16)
        for (float& x : v)
            x = roundToDType(x, DType::BF16);
    return v;
}

// The CPU quantiser's answer (quantizeGemmOperand measuring statistics: never a fast path).
struct CpuOperand {
    std::vector<float> values;
    float decodeScale = 1.0f;
};
inline CpuOperand cpuQuantized(const OperandCase& c, const std::vector<float>& values)
{
    CpuOperand o{std::vector<float>(values.size())};
    QuantStats stats;
    o.decodeScale =
        quantizeGemmOperand(values, o.values, c.layout, c.format, c.shape, c.delayedScale, c.counter, &stats);
    return o;
}

// Bit for bit, except that a NaN need only be a NaN (a GPU's arithmetic makes the canonical one).
inline bool sameValue(float a, float b)
{
    if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) && std::isnan(b);
    return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

} // namespace mantissa::test
