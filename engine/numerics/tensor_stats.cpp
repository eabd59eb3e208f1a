#include "engine/numerics/tensor_stats.h"

#include "engine/numerics/conversions.h"
#include "engine/util/check.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

namespace mantissa {

namespace {

constexpr std::uint32_t kAbsMask = 0x7fffffffu;
constexpr std::uint32_t kInfBits = 0x7f800000u;
// Values per task: large enough that the per-chunk histogram merge is noise, small
// enough that a 16-bit chunk widened to fp32 stays in L1.
constexpr std::size_t kChunk = 4096;

// Largest |x| bit pattern in [0, inf) for which `holds` is true, given it is monotone
// (true up to some point, false after).
template <typename Predicate>
std::uint32_t lastBitsWhere(Predicate holds)
{
    std::uint32_t lo = 0, hi = kInfBits; // holds(lo) is assumed, hi is the search bound
    if (holds(hi))
        return hi;
    while (hi - lo > 1) {
        const std::uint32_t mid = lo + (hi - lo) / 2;
        (holds(mid) ? lo : hi) = mid;
    }
    return lo;
}

RoundingThresholds computeThresholds(DType target)
{
    const float minNormal = dtypeLimits(target).minNormal;
    auto rounded = [target](std::uint32_t bits) { return std::fabs(roundToDType(std::bit_cast<float>(bits), target)); };
    RoundingThresholds t{};
    t.underflowMax = lastBitsWhere([&](std::uint32_t b) { return rounded(b) == 0.0f; });
    t.subnormalMax = lastBitsWhere([&](std::uint32_t b) { return rounded(b) < minNormal; });
    t.overflowMin = lastBitsWhere([&](std::uint32_t b) { return !std::isinf(rounded(b)); }) + 1;
    return t;
}

// One value counted `times` times: the classification every path below shares.
inline void measureValue(float value, std::int64_t times, const RoundingThresholds& t, float histogramScale,
                         TensorStats& s)
{
    const std::uint32_t a = std::bit_cast<std::uint32_t>(value) & kAbsMask;
    if (a >= kInfBits) {
        s.nonFinite += times;
        s.nan += a > kInfBits ? times : 0; // Inf overflowed somewhere; NaN is 0 * Inf or Inf - Inf downstream
        s.histogram[kHistogramNonFiniteBin] += times;
        return;
    }
    if (a == 0) {
        s.zeros += times;
        s.histogram[kHistogramZeroBin] += times;
        return;
    }
    s.underflow += a <= t.underflowMax ? times : 0;
    s.subnormal += a > t.underflowMax && a <= t.subnormalMax ? times : 0;
    s.overflow += a >= t.overflowMin ? times : 0;
    const float shown = histogramScale != 1.0f ? std::bit_cast<float>(a) * histogramScale : std::bit_cast<float>(a);
    const std::uint32_t sb = std::bit_cast<std::uint32_t>(shown);
    if (sb >= kInfBits) {
        s.histogram[kHistogramNonFiniteBin] += times;
        return;
    }
    s.amax = std::max(s.amax, shown);
    // A zero here is a value the rescaling flushed in fp32: it belongs to the lowest bin.
    s.histogram[static_cast<std::size_t>(histogramBinOfExponent(static_cast<int>(sb >> 23) - 127))] += times;
}

void measureChunk(const float* values, std::size_t n, const RoundingThresholds& t, float histogramScale, TensorStats& s)
{
    for (std::size_t i = 0; i < n; ++i)
        measureValue(values[i], 1, t, histogramScale, s);
    s.count += static_cast<std::int64_t>(n);
}

// A 16-bit tensor has at most 65,536 distinct values: above this size, counting each word once
// and classifying each distinct word once is several times faster than classifying every
// element (one increment per element instead of a widening and a dozen branches).
constexpr std::size_t kWordCountingFrom = std::size_t{1} << 16;

TensorStats measureByWordCounts(const std::uint16_t* words, std::size_t n, DType storage, const RoundingThresholds& t,
                                float histogramScale)
{
    std::vector<std::uint32_t> counts(std::size_t{1} << 16, 0);
    const auto chunks = static_cast<std::int64_t>((n + kChunk - 1) / kChunk);
#pragma omp parallel
    {
        std::vector<std::uint32_t> local(counts.size(), 0);
#pragma omp for schedule(static) nowait
        for (std::int64_t c = 0; c < chunks; ++c) {
            const std::size_t begin = static_cast<std::size_t>(c) * kChunk;
            const std::size_t end = std::min(n, begin + kChunk);
            for (std::size_t i = begin; i < end; ++i)
                ++local[words[i]];
        }
#pragma omp critical(mantissa_tensor_stats)
        for (std::size_t w = 0; w < counts.size(); ++w)
            counts[w] += local[w];
    }
    std::vector<std::uint16_t> allWords(counts.size());
    for (std::size_t w = 0; w < allWords.size(); ++w)
        allWords[w] = static_cast<std::uint16_t>(w);
    std::vector<float> values(counts.size());
    widenToFloat(allWords.data(), storage, values.data(), values.size());
    TensorStats s;
    for (std::size_t w = 0; w < counts.size(); ++w)
        if (counts[w] != 0)
            measureValue(values[w], counts[w], t, histogramScale, s);
    s.count = static_cast<std::int64_t>(n);
    return s;
}

// Splits [0, n) into chunks measured in parallel, each through `measure(begin, count, stats)`.
template <typename Measure>
TensorStats measureChunks(std::size_t n, Measure measure)
{
    TensorStats total;
    const auto chunks = static_cast<std::int64_t>((n + kChunk - 1) / kChunk);
#pragma omp parallel if (chunks > 16)
    {
        TensorStats local;
#pragma omp for schedule(static) nowait
        for (std::int64_t c = 0; c < chunks; ++c) {
            const std::size_t begin = static_cast<std::size_t>(c) * kChunk;
            measure(begin, std::min(n, begin + kChunk) - begin, local);
        }
#pragma omp critical(mantissa_tensor_stats)
        total.merge(local);
    }
    return total;
}

} // namespace

int histogramBin(float value)
{
    const std::uint32_t a = std::bit_cast<std::uint32_t>(value) & kAbsMask;
    if (a >= kInfBits)
        return kHistogramNonFiniteBin;
    if (a == 0)
        return kHistogramZeroBin;
    return histogramBinOfExponent(static_cast<int>(a >> 23) - 127);
}

void TensorStats::merge(const TensorStats& o)
{
    count += o.count;
    amax = std::max(amax, o.amax);
    zeros += o.zeros;
    underflow += o.underflow;
    subnormal += o.subnormal;
    overflow += o.overflow;
    nonFinite += o.nonFinite;
    nan += o.nan;
    for (std::size_t i = 0; i < histogram.size(); ++i)
        histogram[i] += o.histogram[i];
}

RoundingThresholds roundingThresholds(DType target)
{
    static const RoundingThresholds f32 = computeThresholds(DType::F32);
    static const RoundingThresholds f16 = computeThresholds(DType::F16);
    static const RoundingThresholds bf16 = computeThresholds(DType::BF16);
    switch (target) {
    case DType::F32: return f32;
    case DType::F16: return f16;
    case DType::BF16: return bf16;
    }
    return f32;
}

TensorStats measureValues(const float* values, std::size_t n, DType target, float histogramScale)
{
    const RoundingThresholds t = roundingThresholds(target);
    return measureChunks(n, [&](std::size_t begin, std::size_t count, TensorStats& s) {
        measureChunk(values + begin, count, t, histogramScale, s);
    });
}

TensorStats measure16BitValues(const std::uint16_t* words, std::size_t n, DType storage, DType target,
                               float histogramScale)
{
    MANTISSA_ASSERT(storage != DType::F32);
    const RoundingThresholds t = roundingThresholds(target);
    if (n >= kWordCountingFrom)
        return measureByWordCounts(words, n, storage, t, histogramScale);
    return measureChunks(n, [&](std::size_t begin, std::size_t count, TensorStats& s) {
        float wide[kChunk];
        widenToFloat(words + begin, storage, wide, count);
        measureChunk(wide, count, t, histogramScale, s);
    });
}

} // namespace mantissa
