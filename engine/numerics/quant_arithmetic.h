#pragma once
// The arithmetic of quantising one GEMM operand, written once for the host and the CUDA
// device (issue 17: a recipe's GEMM quantises its inputs on the GPU to the CPU's bits). It is
// block_quantizer.cpp's and minifloat_codec.cpp's arithmetic restated on plain integers and
// explicitly rounded fp32 operations, with no table and no library call, so that nvcc
// compiles the same functions into the kernels (engine/backend/cuda/quantize_operand.cu) and
// the host test (quant_arithmetic_test) checks them, bit for bit, against the CPU quantiser.
//
// Every multiply and divide goes through mul()/div(): on the device __fmul_rn/__fdiv_rn, which
// nvcc never contracts into an fma nor approximates, so each is one IEEE operation rounded to
// nearest even, as on the host. Subnormals are kept on both sides (the plugin is not built
// with --use_fast_math or -ftz). Where the two sides still differ is NaN's bits: a GPU's fp32
// arithmetic makes the canonical NaN 0x7fffffff whatever the operands, x86 keeps the operand's
// payload and sign; a NaN is a NaN on both, and the parity tests compare it as such.
#include "engine/numerics/stochastic_bits.h"
#include "engine/util/host_device.h"

#include <cstdint>

#if !defined(__CUDA_ARCH__)
#include <bit>
#endif

namespace mantissa::qa {

// --- fp32 operations, identical on host and device --------------------------------------

MANTISSA_HD std::uint32_t bitsOf(float x)
{
#if defined(__CUDA_ARCH__)
    return __float_as_uint(x);
#else
    return std::bit_cast<std::uint32_t>(x);
#endif
}

MANTISSA_HD float floatOf(std::uint32_t bits)
{
#if defined(__CUDA_ARCH__)
    return __uint_as_float(bits);
#else
    return std::bit_cast<float>(bits);
#endif
}

MANTISSA_HD std::uint64_t bitsOf(double x)
{
#if defined(__CUDA_ARCH__)
    return static_cast<std::uint64_t>(__double_as_longlong(x));
#else
    return std::bit_cast<std::uint64_t>(x);
#endif
}

MANTISSA_HD float mul(float a, float b)
{
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

MANTISSA_HD float div(float a, float b)
{
#if defined(__CUDA_ARCH__)
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}

MANTISSA_HD double div(double a, double b)
{
#if defined(__CUDA_ARCH__)
    return __ddiv_rn(a, b);
#else
    return a / b;
#endif
}

MANTISSA_HD int countLeadingZeros(std::uint32_t x)
{
#if defined(__CUDA_ARCH__)
    return __clz(static_cast<int>(x));
#else
    return std::countl_zero(x);
#endif
}

constexpr std::uint32_t kAbsMask = 0x7fffffffu;
constexpr std::uint32_t kInfinityBits = 0x7f800000u;
constexpr std::uint32_t kQuietNan = 0x7fc00000u;
constexpr float kMaxFloat = 3.40282346638528859812e+38f;

MANTISSA_HD bool isFinite(float x) { return (bitsOf(x) & kAbsMask) < kInfinityBits; }
MANTISSA_HD float magnitude(float x) { return floatOf(bitsOf(x) & kAbsMask); }
MANTISSA_HD float nan() { return floatOf(kQuietNan); }

// 2^e for e in [-149, 127], from its bits.
MANTISSA_HD float powerOfTwo(int e)
{
    return e >= -126 ? floatOf(static_cast<std::uint32_t>(e + 127) << 23) : floatOf(1u << (e + 149));
}

// floor(log2 x) of a finite x > 0, subnormals included (std::ilogb's answer).
MANTISSA_HD int floorLog2(float x)
{
    const std::uint32_t bits = bitsOf(x) & kAbsMask;
    if (bits >= 0x00800000u)
        return static_cast<int>(bits >> 23) - 127;
    return (31 - countLeadingZeros(bits)) - 149;
}

// --- one element format ----------------------------------------------------------------

// What encoding and decoding need of a MiniFloatFormat (minifloat_format.h), as plain fields.
struct ElementSpec {
    enum Specials : std::uint8_t { None, IeeeInfNan, AllOnesNan };
    int mantissaBits = 0;
    int exponentBits = 0;
    int bias = 0;
    std::uint32_t maxMagnitude = 0; // the magnitude code of the largest finite value
    std::uint32_t signMask = 0;
    Specials specials = None;

    MANTISSA_HD std::uint32_t allOnes() const { return (1u << (exponentBits + mantissaBits)) - 1u; }
    MANTISSA_HD int minExponent() const { return 1 - bias; }
};

// significand / 2^shift (shift >= 1) to an integer, to nearest even or up with probability
// (discarded part) / 2^shift against 64 random bits (the scaled probability loses at most 2^-64
// to truncation past shift 64). minifloat_codec.cpp rounds through it too.
MANTISSA_HD std::uint64_t roundShifted(std::uint32_t significand, int shift, bool stochastic, std::uint64_t random)
{
    if (!stochastic) {
        if (shift >= 25)
            return 0;
        const std::uint64_t kept = significand >> shift;
        const std::uint32_t rest = significand & ((1u << shift) - 1u);
        const std::uint32_t half = 1u << (shift - 1);
        return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
    }
    if (shift < 64) {
        const std::uint64_t kept = shift >= 32 ? 0 : significand >> shift;
        const std::uint64_t rest = shift >= 32 ? significand : significand & ((1ull << shift) - 1u);
        return kept + ((random >> (64 - shift)) < rest ? 1u : 0u);
    }
    const int excess = shift - 64;
    const std::uint64_t threshold = excess >= 32 ? 0 : significand >> excess;
    return random < threshold ? 1u : 0u;
}

// minifloat_codec.cpp's encodeSigned under OverflowRule::Saturate, the rule of every scaled
// scheme: a finite value beyond the range and an Inf give the largest finite value with the
// sign; a NaN gives the format's NaN (S.1111.111, S.11111.11), or +max where it has none.
MANTISSA_HD std::uint32_t encodeSaturating(float value, const ElementSpec& f, bool stochastic, std::uint64_t random)
{
    const std::uint32_t bits = bitsOf(value);
    const std::uint32_t sign = (bits >> 31) ? f.signMask : 0u;
    const std::uint32_t absBits = bits & kAbsMask;
    if (absBits > kInfinityBits)
        return f.specials != ElementSpec::None ? (sign | f.allOnes()) : f.maxMagnitude;
    if (absBits == kInfinityBits)
        return sign | f.maxMagnitude;
    if (absBits == 0)
        return sign;
    // As significand * 2^exponent with the significand's top bit at bit 23.
    std::uint32_t significand = 0;
    int exponent = 0;
    if (absBits >= 0x00800000u) {
        significand = (absBits & 0x007fffffu) | 0x00800000u;
        exponent = static_cast<int>(absBits >> 23) - 127 - 23;
    } else {
        const int shift = countLeadingZeros(absBits) - 8;
        significand = absBits << shift;
        exponent = -126 - 23 - shift;
    }
    const int binade = exponent + 23 > f.minExponent() ? exponent + 23 : f.minExponent();
    const int shift = (binade - f.mantissaBits) - exponent;
    const std::uint64_t n = roundShifted(significand, shift, stochastic, random);
    const std::uint64_t code = (static_cast<std::uint64_t>(binade - f.minExponent()) << f.mantissaBits) + n;
    if (code > f.maxMagnitude)
        return sign | f.maxMagnitude;
    return sign | static_cast<std::uint32_t>(code);
}

// minifloat_codec.cpp's decodeFromFields: every code exactly (an integer of at most M + 1 bits
// times a power of two is an fp32).
MANTISSA_HD float decodeCode(std::uint32_t code, const ElementSpec& f)
{
    const bool negative = (code & f.signMask) != 0;
    const std::uint32_t mag = code & f.allOnes();
    const std::uint32_t exponentField = mag >> f.mantissaBits;
    const std::uint32_t mantissa = mag & ((1u << f.mantissaBits) - 1u);
    float value = 0.0f;
    if (f.specials == ElementSpec::AllOnesNan && mag == f.allOnes())
        value = nan();
    else if (f.specials == ElementSpec::IeeeInfNan && exponentField == (1u << f.exponentBits) - 1u)
        value = mantissa != 0 ? nan() : floatOf(kInfinityBits);
    else if (exponentField == 0)
        value = mul(static_cast<float>(mantissa), powerOfTwo(f.minExponent() - f.mantissaBits));
    else
        value = mul(static_cast<float>((1u << f.mantissaBits) | mantissa),
                    powerOfTwo(static_cast<int>(exponentField) - f.bias - f.mantissaBits));
    return negative ? -value : value;
}

// --- the scale of a block --------------------------------------------------------------

enum class Scheme : std::uint8_t { PerTensor, Fp32Blocks, Mx, Nvfp4 };
enum class MxRule : std::uint8_t { Floor, Ceil, RCeil };

// Elements are encode(x * multiplier); values decode(code) * scale; a NaN scale makes the
// block NaN (MX and NVFP4 blocks holding a NaN or an Inf).
struct Plan {
    float multiplier = 1.0f;
    float scale = 1.0f;
    bool nanScale = false;
};

// Transformer Engine's compute_scale_from_amax (block_quantizer.cpp's fp32Plan).
MANTISSA_HD Plan fp32Plan(float amax, float elementMax, bool powerOfTwoScales)
{
    float s = 1.0f;
    if (amax > 0.0f) {
        s = div(elementMax, amax);
        if (!isFinite(s))
            s = kMaxFloat;
        if (powerOfTwoScales)
            s = powerOfTwo(floorLog2(s));
    }
    return {s, div(1.0f, s), false};
}

// The E8M0 exponent of an MX block (block_quantizer.cpp's mxExponent), clamped to [-127, 127].
MANTISSA_HD int mxExponent(float amax, MxRule rule, int elementMaxExponent, float elementMax)
{
    if (amax == 0.0f)
        return -127;
    const int floorLog = floorLog2(amax);
    const bool exactPower = amax == powerOfTwo(floorLog);
    int exponent = 0;
    switch (rule) {
    case MxRule::Floor: exponent = floorLog - elementMaxExponent; break;
    case MxRule::Ceil: exponent = floorLog + (exactPower ? 0 : 1) - elementMaxExponent; break;
    case MxRule::RCeil: {
        // ceil(log2(amax / max)) decided in double, where the quotient (of two fp32 values, a
        // normal double) is a power of two only when it is one.
        const std::uint64_t ratio = bitsOf(div(static_cast<double>(amax), static_cast<double>(elementMax)));
        const int k = static_cast<int>((ratio >> 52) & 0x7ffu) - 1023;
        exponent = (ratio & 0x000fffffffffffffull) == 0 ? k : k + 1;
        break;
    }
    }
    return exponent < -127 ? -127 : (exponent > 127 ? 127 : exponent);
}

constexpr float kNvfp4ScaleRange = 448.0f * 6.0f; // E4M3 max times E2M1 max
constexpr float kNvfp4DecodeFactor = static_cast<float>(1.0 / (6.0 * 448.0));

// NVFP4's tensor-level encode scale S_enc = 2688 / amax(tensor) (1 for an all-zero tensor).
MANTISSA_HD float nvfp4TensorEncodeScale(float tensorAmax)
{
    if (tensorAmax == 0.0f)
        return 1.0f;
    const float s = div(kNvfp4ScaleRange, tensorAmax);
    return isFinite(s) ? s : kMaxFloat;
}

// Everything one operand's blocks share: the format and the tensor-level numbers.
struct OperandPlan {
    Scheme scheme = Scheme::PerTensor;
    ElementSpec element;
    ElementSpec e4m3;           // NVFP4's block scale format
    float elementMax = 0.0f;    // the element format's largest finite value
    int elementMaxExponent = 0; // floor(log2(elementMax))
    MxRule mxRule = MxRule::Floor;
    bool powerOfTwoScales = false;
    bool stochastic = false;
    std::uint64_t stream = 0, firstCounter = 0;
    // Per tensor: the plan every value uses (max / amax now, or the delayed scale).
    Plan tensorPlan;
    bool elementsOnly = false; // per tensor: write the elements; the GEMM applies the decode scale
    // NVFP4: amax over the tensor's finite values and S_enc.
    float tensorAmax = 0.0f, tensorEncodeScale = 1.0f;

    // A block's plan from the largest finite magnitude of its values and whether any is NaN or Inf.
    MANTISSA_HD Plan blockPlan(float amax, bool nonFinite) const
    {
        switch (scheme) {
        case Scheme::PerTensor: return fp32Plan(amax, elementMax, powerOfTwoScales); // a 128x128 tile's own
        case Scheme::Fp32Blocks: return fp32Plan(amax, elementMax, powerOfTwoScales);
        case Scheme::Mx: {
            if (nonFinite)
                return {0.0f, nan(), true};
            const int e = mxExponent(amax, mxRule, elementMaxExponent, elementMax);
            return {powerOfTwo(-e), powerOfTwo(e), false};
        }
        case Scheme::Nvfp4: {
            if (nonFinite)
                return {0.0f, nan(), true};
            // The E4M3 block scale of amax / 6 in the tensor's scale, nearest even, saturating; its
            // value decoded * amax(tensor) / 2688, in Transformer Engine's order.
            const float decoded =
                decodeCode(encodeSaturating(mul(div(amax, 6.0f), tensorEncodeScale), e4m3, false, 0), e4m3);
            const float multiplier = decoded == 0.0f ? 0.0f : div(tensorEncodeScale, decoded);
            return {multiplier, mul(mul(decoded, tensorAmax), kNvfp4DecodeFactor), false};
        }
        }
        return {};
    }

    // One value of a block with `plan`; `counter` is its index in the CPU's span (the stochastic draw).
    MANTISSA_HD float quantizeValue(float x, const Plan& plan, std::uint64_t counter) const
    {
        if (plan.nanScale)
            return nan();
        const std::uint64_t random = stochastic ? stochasticBits(stream, firstCounter + counter) : 0;
        const float element =
            decodeCode(encodeSaturating(mul(x, plan.multiplier), this->element, stochastic, random), this->element);
        return elementsOnly ? element : mul(element, plan.scale);
    }
};

// --- where an operand's blocks lie ----------------------------------------------------------

// The operand as the CPU quantiser gathers it (gemm_inputs.cpp's gather): a matrix of rows() x
// cols() with K along each row, over a row-major buffer [outer, k, inner]:
//  AlongRows: rows (o, i), K = k: the gathered [outer, inner, k] (inner 1: the buffer itself);
//  Around:    rows k, K = (outer, inner) flattened: a convolution's weight gradient;
//  Tiles:     rows outer, K = (inner, k), one row per outer: the gathered [outer, inner, k] that
//             NVFP4's 16x16 weight tiles cover (weightTileLayout), and with inner 1 a plain
//             [outer, k] matrix (128x128 fp32 tiles).
// offset(r, c) is where the gathered value (r, c) lies in the buffer; r * cols() + c is its
// index in the gathered span, which picks its stochastic draw as on the CPU.
struct OperandView {
    enum Kind : std::uint8_t { AlongRows, Around, Tiles };
    Kind kind = AlongRows;
    std::int64_t outer = 1, k = 1, inner = 1;

    MANTISSA_HD std::int64_t rows() const { return kind == AlongRows ? outer * inner : (kind == Around ? k : outer); }
    MANTISSA_HD std::int64_t cols() const
    {
        return kind == AlongRows ? k : (kind == Around ? outer * inner : inner * k);
    }
    MANTISSA_HD std::int64_t offset(std::int64_t r, std::int64_t c) const
    {
        switch (kind) {
        case AlongRows: return ((r / inner) * k + c) * inner + r % inner;
        case Around: return ((c / inner) * k + r) * inner + c % inner;
        case Tiles: return (r * k + c % k) * inner + c / k;
        }
        return 0;
    }
};

// Block b of a grid of blockRows x blockCols blocks over the view (short at the edges: zero
// padding), as block_quantizer.cpp numbers them: row-major over the tile rows.
struct BlockGrid {
    std::int64_t blockRows = 1, blockCols = 1;
    // Counters local to each block (gemm_inputs.cpp's quantizeTiles hands every 128x128 tile to
    // the quantiser as a span of its own) rather than the index in the gathered span.
    bool localCounters = false;

    MANTISSA_HD std::int64_t blocksPerRow(const OperandView& v) const { return (v.cols() + blockCols - 1) / blockCols; }
    MANTISSA_HD std::int64_t count(const OperandView& v) const
    {
        return (v.rows() + blockRows - 1) / blockRows * blocksPerRow(v);
    }
};

// Quantises block `b`: its amax over the finite values, its plan, then every value.
// load(offset) -> float reads the operand, store(offset, float) writes the result.
template <typename Load, typename Store>
MANTISSA_HD void quantizeBlock(const OperandPlan& p, const OperandView& v, const BlockGrid& g, std::int64_t b,
                               Load load, Store store)
{
    const std::int64_t perRow = g.blocksPerRow(v), rows = v.rows(), cols = v.cols();
    const std::int64_t r0 = b / perRow * g.blockRows, c0 = b % perRow * g.blockCols;
    const std::int64_t r1 = r0 + g.blockRows < rows ? r0 + g.blockRows : rows;
    const std::int64_t c1 = c0 + g.blockCols < cols ? c0 + g.blockCols : cols;
    float amax = 0.0f;
    bool nonFinite = false;
    for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t c = c0; c < c1; ++c) {
            const float x = load(v.offset(r, c));
            if (isFinite(x)) {
                const float a = magnitude(x);
                amax = a > amax ? a : amax;
            } else {
                nonFinite = true;
            }
        }
    const Plan plan = p.blockPlan(amax, nonFinite);
    for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t c = c0; c < c1; ++c) {
            const std::int64_t at = v.offset(r, c);
            const std::int64_t counter = g.localCounters ? (r - r0) * (c1 - c0) + (c - c0) : r * cols + c;
            store(at, p.quantizeValue(load(at), plan, static_cast<std::uint64_t>(counter)));
        }
}

} // namespace mantissa::qa
