#pragma once
// How an optimizer step stores an updated weight into bf16 masters (engine/precision/master_weights.h),
// element by element: pure functions that the CPU's update pass and the CUDA kernels share, so that
// both store the same bits.
//
// Stochastic rounding draws 16 bits per element from a counter-based hash of (seed, step,
// parameter, element), the pattern of the dropout mask (dropout_hash.h): no generator state,
// so a run repeats bit for bit whatever the threads, and resumes from a checkpoint at any step.
#include "engine/backend/dropout_hash.h"
#include "engine/numerics/quant_arithmetic.h"
#include "engine/util/host_device.h"

#include <cstdint>

namespace mantissa::update_rounding {

// The key of one parameter's draws at one training step. Each mix is a bijection, so two
// parameters of one step never share a key.
MANTISSA_HD dropout::Key stepKey(std::uint64_t seed, std::uint64_t step, std::uint32_t parameter)
{
    const std::uint64_t key =
        dropout::mix64(seed ^ dropout::mix64(dropout::mix64(step + 0x2545f4914f6cdd1dull) + parameter));
    return {static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32)};
}

// 32 uniform bits for element `index` under a key.
MANTISSA_HD std::uint32_t randomBits(dropout::Key key, std::uint32_t index)
{
    return dropout::mix32(dropout::mix32(index ^ key.k0) + key.k1);
}

// bf16 rounded to nearest even, as the CPU's conversions and __float2bfloat16_rn store it; a NaN
// stays a quiet NaN of its sign.
MANTISSA_HD std::uint16_t bf16Nearest(float value)
{
    const std::uint32_t bits = qa::bitsOf(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u)
        return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
    return static_cast<std::uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

// bf16 rounded stochastically: the 16 discarded bits plus 16 uniform random bits carry into the
// kept half with probability discarded / 2^16, exactly, so the stored value's expectation is
// `value` (unbiased) wherever it does not overflow. Infinities stay; a NaN stays a quiet NaN.
MANTISSA_HD std::uint16_t bf16Stochastic(float value, std::uint32_t random)
{
    const std::uint32_t bits = qa::bitsOf(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u)
        return static_cast<std::uint16_t>((bits >> 16) | 0x40u);
    if ((bits & 0x7fffffffu) == 0x7f800000u)
        return static_cast<std::uint16_t>(bits >> 16);
    return static_cast<std::uint16_t>((bits + (random & 0xffffu)) >> 16);
}

MANTISSA_HD float bf16Value(std::uint16_t stored) { return qa::floatOf(static_cast<std::uint32_t>(stored) << 16); }

struct KahanStore {
    std::uint16_t weight, compensation; // both bf16
};

// Kahan summation of one update into a bf16 weight: `updated` is the step's result in fp32
// computed from `weight`, so updated - weight is the update (exact up to fp32's rounding of
// `updated`, 2^-24 of the weight, far below the bf16 compensation's own resolution). The
// compensation carried from earlier steps is added to it, the sum is rounded into the weight,
// and what that rounding lost is the new compensation.
MANTISSA_HD KahanStore kahanStore(float weight, float updated, float compensation)
{
    const float sum = (updated - weight) + compensation;
    const std::uint16_t stored = bf16Nearest(weight + sum);
    const float lost = sum - (bf16Value(stored) - weight);
    return {stored, bf16Nearest(lost)};
}

} // namespace mantissa::update_rounding
