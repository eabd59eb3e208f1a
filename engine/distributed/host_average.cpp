#include "engine/distributed/host_average.h"

#include "engine/numerics/conversions.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace mantissa {

namespace {

std::int64_t countNonZero(const std::vector<float>& values)
{
    return std::count_if(values.begin(), values.end(), [](float v) { return v != 0.0f; });
}

} // namespace

AllReduceDivisors reductionDivisors(ReductionOrder order, int worldSize)
{
    const float n = static_cast<float>(worldSize);
    switch (order) {
    case ReductionOrder::DivideThenSum: return {n, 1.0f};
    case ReductionOrder::SqrtSplit: return {std::sqrt(n), std::sqrt(n)};
    case ReductionOrder::SumThenDivide: break;
    }
    return {1.0f, n};
}

AllReduceOutcome averageOnHost(Communicator& communicator, std::vector<float>& values, DType type,
                               AllReduceDivisors divisors)
{
    AllReduceOutcome outcome;
    outcome.localNonFinite = std::any_of(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
    const std::size_t total = values.size();
    if (type == DType::F32) {
        if (divisors.before != 1.0f)
            for (float& v : values)
                v /= divisors.before;
        communicator.sumFloats(values);
        if (divisors.after != 1.0f)
            for (float& v : values)
                v /= divisors.after;
    } else {
        // Each division is rounded to the 16-bit type, as a kernel dividing a 16-bit buffer would.
        if (divisors.before != 1.0f) {
            // A nonzero 16-bit value divided by at most 65536 stays nonzero in fp32, so the values
            // the rounding flushed are the nonzero ones lost between the two counts.
            for (float& v : values)
                v /= divisors.before;
            outcome.flushedByDivision = countNonZero(values);
            roundThrough(values.data(), total, type);
            outcome.flushedByDivision -= countNonZero(values);
        }
        // Kept between calls: a fresh buffer every step would fault its pages in every step.
        static thread_local std::vector<std::uint16_t> words;
        words.resize(total);
        narrowFromFloat(values.data(), words.data(), total, type); // exact: the values are in `type`
        communicator.sumWords(words, type);
        widenToFloat(words.data(), type, values.data(), total);
        if (!outcome.localNonFinite)
            outcome.overflowedInSum =
                std::count_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
        if (divisors.after != 1.0f) {
            for (float& v : values)
                v /= divisors.after;
            roundThrough(values.data(), total, type);
        }
    }
    for (float v : values)
        outcome.amax = std::max(outcome.amax, std::fabs(v)); // std::max keeps amax against a NaN
    return outcome;
}

} // namespace mantissa
