#include "engine/numerics/fast_quantizer.h"

#include "engine/numerics/fast_rounding.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace mantissa {

namespace {

using fastq::ElementRounding;
using fastq::Plan;
using fastq::roundOne;

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
        format.blockRows != 1 || out.size() != values.size() || values.empty()) // 1D blocks only
        return false;
    const ElementRounding r = fastq::roundingOf(format.element);
    const std::size_t n = values.size();
    if (format.scheme == ScalingScheme::PerTensor) {
        float amax = 0.0f;
        if (!finiteAmax(values.data(), n, amax))
            return false;
        const Plan plan = fastq::fp32Plan(amax, format);
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
        const Plan plan = fastq::blockPlan(amax, format);
        roundSpan(values.data() + begin, out.data() + begin, length, plan, r);
    }
    return finite.load();
}

} // namespace mantissa
