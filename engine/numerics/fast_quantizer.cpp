#include "engine/numerics/fast_quantizer.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace mantissa {

namespace {

// What the element rounding needs, taken once from the format's table.
struct ElementRounding {
    std::uint32_t shift;  // fp32 mantissa bits cut: 23 - M
    float minNormal;      // below: the subnormal rounding
    float subnormalMagic; // 2^(emin - M + 23): a + magic - magic rounds a to the subnormal grid
    float maxFinite;      // saturation
};

ElementRounding roundingOf(MiniFloat element)
{
    const MiniFloatFormat& f = miniFloatFormat(element);
    return {static_cast<std::uint32_t>(23 - f.mantissaBits), f.minNormal(), std::ldexp(f.minSubnormal(), 23),
            f.maxFinite()};
}

// One value scaled by `multiplier`, rounded to the element format, saturated, times `scale`.
// Branch-free so that the loop calling it vectorises.
inline float roundOne(float x, float multiplier, float scale, const ElementRounding& r)
{
    const float y = x * multiplier;
    const float a = std::fabs(y);
    std::uint32_t bits = std::bit_cast<std::uint32_t>(a);
    bits += ((1u << (r.shift - 1)) - 1u) + ((bits >> r.shift) & 1u);
    bits &= ~((1u << r.shift) - 1u);
    const float normal = std::bit_cast<float>(bits);
    const float subnormal = (a + r.subnormalMagic) - r.subnormalMagic;
    float rounded = a < r.minNormal ? subnormal : normal;
    rounded = std::min(rounded, r.maxFinite);
    return std::copysign(rounded, y) * scale;
}

// The largest magnitude of a span, and whether all of it is finite.
inline bool finiteAmax(const float* v, std::size_t n, float& amax)
{
    float m = 0.0f;
    bool finite = true;
    for (std::size_t i = 0; i < n; ++i) {
        const float a = std::fabs(v[i]);
        finite = finite && a <= std::numeric_limits<float>::max();
        m = std::max(m, a);
    }
    amax = m;
    return finite;
}

// The encode multiplier and decode scale of a block, as block_quantizer.cpp plans them.
struct Plan {
    float multiplier, scale;
};

Plan fp32Plan(float amax, const QuantFormat& format)
{
    float s = 1.0f;
    if (amax > 0.0f) {
        s = miniFloatFormat(format.element).maxFinite() / amax;
        if (std::isinf(s))
            s = std::numeric_limits<float>::max();
        if (format.powerOfTwoScales)
            s = std::ldexp(1.0f, std::ilogb(s));
    }
    return {s, 1.0f / s};
}

Plan mxPlan(float amax, const QuantFormat& format)
{
    int exponent = -127;
    if (amax != 0.0f) {
        const MiniFloatFormat& element = miniFloatFormat(format.element);
        const int floorLog = std::ilogb(amax);
        const bool powerOfTwo = amax == std::ldexp(1.0f, floorLog);
        switch (format.scaleRule) {
        case MxScaleRule::Floor: exponent = floorLog - element.maxExponent(); break;
        case MxScaleRule::Ceil: exponent = floorLog + (powerOfTwo ? 0 : 1) - element.maxExponent(); break;
        case MxScaleRule::RCeil: {
            const double ratio = static_cast<double>(amax) / static_cast<double>(element.maxFinite());
            const int k = std::ilogb(ratio);
            exponent = ratio == std::ldexp(1.0, k) ? k : k + 1;
            break;
        }
        }
        exponent = std::clamp(exponent, -127, 127);
    }
    return {std::ldexp(1.0f, -exponent), std::ldexp(1.0f, exponent)};
}

void roundSpan(const float* in, float* out, std::size_t n, Plan plan, const ElementRounding& r)
{
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i)
        out[i] = roundOne(in[i], plan.multiplier, plan.scale, r);
}

} // namespace

bool quantizeDequantizeFast(std::span<const float> values, std::span<float> out, std::size_t rowLength,
                            const QuantFormat& format)
{
    const bool scheme = format.scheme == ScalingScheme::PerTensor || format.scheme == ScalingScheme::Fp32Blocks ||
                        format.scheme == ScalingScheme::Mx;
    if (!scheme || format.element == MiniFloat::E8M0 || format.encoding.rounding != Rounding::NearestEven ||
        out.size() != values.size() || values.empty())
        return false;
    const ElementRounding r = roundingOf(format.element);
    const std::size_t n = values.size();
    if (format.scheme == ScalingScheme::PerTensor) {
        float amax = 0.0f;
        if (!finiteAmax(values.data(), n, amax))
            return false;
        const Plan plan = fp32Plan(amax, format);
        const auto chunks = static_cast<std::int64_t>((n + 4095) / 4096);
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
        for (std::int64_t c = 0; c < chunks; ++c) {
            const std::size_t begin = static_cast<std::size_t>(c) * 4096;
            roundSpan(values.data() + begin, out.data() + begin, std::min<std::size_t>(4096, n - begin), plan, r);
        }
        return true;
    }
    const std::size_t row = rowLength == 0 ? n : rowLength;
    const std::size_t block = format.blockSize;
    if (block == 0 || n % row != 0 || (row % block != 0 && format.partialBlocks == PartialBlock::Refuse))
        return false;
    const std::size_t blocksPerRow = (row + block - 1) / block;
    const auto blockCount = static_cast<std::int64_t>(n / row * blocksPerRow);
    std::atomic<bool> finite{true};
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
    for (std::int64_t b = 0; b < blockCount; ++b) {
        const std::size_t rowIndex = static_cast<std::size_t>(b) / blocksPerRow;
        const std::size_t begin = rowIndex * row + (static_cast<std::size_t>(b) % blocksPerRow) * block;
        const std::size_t length = std::min(block, (rowIndex + 1) * row - begin);
        float amax = 0.0f;
        if (!finiteAmax(values.data() + begin, length, amax)) {
            finite.store(false, std::memory_order_relaxed);
            continue;
        }
        const Plan plan = format.scheme == ScalingScheme::Mx ? mxPlan(amax, format) : fp32Plan(amax, format);
        roundSpan(values.data() + begin, out.data() + begin, length, plan, r);
    }
    return finite.load();
}

} // namespace mantissa
