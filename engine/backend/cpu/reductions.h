#pragma once
// Sums for statistics and bias gradients. A single running fp32 sum over a whole batch
// (100k values for a conv bias) drifts by up to n ulps, and a running double sum is a serial
// dependency chain the compiler may not vectorise. Sixteen fp32 lanes over short blocks,
// folded into a double after each block, are both fast and accurate to a few fp32 ulps.
#include "engine/backend/cpu/bf16_bits.h"

#include <algorithm>
#include <cstdint>

namespace mantissa::cpu {

namespace detail {
constexpr std::int64_t kLanes = 16;
constexpr std::int64_t kBlock = 1024;

// Sum of f(v[i]) over a block of at most kBlock values, in independent fp32 lanes.
template <typename T, typename F>
double blockSum(const T* v, std::int64_t n, F f)
{
    float lanes[kLanes] = {};
    std::int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (std::int64_t j = 0; j < kLanes; ++j)
            lanes[j] += f(widened(v[i + j]));
    double total = 0;
    for (; i < n; ++i)
        total += f(widened(v[i]));
    for (float lane : lanes)
        total += lane;
    return total;
}

template <typename T, typename F>
double mappedSum(const T* v, std::int64_t n, F f, double total)
{
    for (std::int64_t start = 0; start < n; start += kBlock)
        total += blockSum(v + start, std::min(kBlock, n - start), f);
    return total;
}
} // namespace detail

// Each sum below may go on from a `carried` total: a sum taken in pieces of whole kBlocks
// (a 16-bit plane widened a block at a time) then gives the bits of the sum taken at once.
// Each reads fp32 values or bf16 bits (Bf16Bits), with the same bits for the same values.
inline constexpr std::int64_t kSumBlock = detail::kBlock;

// sum(v[i])
template <typename T>
double sumFloats(const T* v, std::int64_t n, double carried = 0)
{
    return detail::mappedSum(
        v, n, [](float x) { return x; }, carried);
}

// sum((v[i] - mean)^2): the second pass of a two-pass variance, which (unlike E[x^2] - E[x]^2)
// keeps its accuracy when the mean is large against the spread.
template <typename T>
double sumSquaredDeviations(const T* v, std::int64_t n, float mean, double carried = 0)
{
    return detail::mappedSum(
        v, n, [mean](float x) { return (x - mean) * (x - mean); }, carried);
}

// sum(a[i] * (x[i] - mean)): the batch-norm gradient term, formed without the cancellation
// of sum(a x) - mean sum(a) when the mean is large.
template <typename T>
double dotDeviations(const T* a, const T* x, std::int64_t n, float mean, double carried = 0)
{
    double total = carried;
    for (std::int64_t start = 0; start < n; start += detail::kBlock) {
        const std::int64_t count = std::min(detail::kBlock, n - start);
        const T* pa = a + start;
        const T* px = x + start;
        float lanes[detail::kLanes] = {};
        std::int64_t i = 0;
        for (; i + detail::kLanes <= count; i += detail::kLanes)
            for (std::int64_t j = 0; j < detail::kLanes; ++j)
                lanes[j] += widened(pa[i + j]) * (widened(px[i + j]) - mean);
        for (; i < count; ++i)
            total += widened(pa[i]) * (widened(px[i]) - mean);
        for (float lane : lanes)
            total += lane;
    }
    return total;
}

} // namespace mantissa::cpu
