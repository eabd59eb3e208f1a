#pragma once
// The random bits stochastic rounding draws, as a pure function of (seed, counter): the
// SplitMix64 generator evaluated at position `counter` of the stream `seed`. Counter-based
// rather than a stateful generator, so element i of a tensor gets the same draw whichever
// thread converts it and in whichever order: a run repeats bit for bit (as the dropout mask
// does, engine/backend/dropout_hash.h). Pure functions, so the CUDA kernels draw the same
// bits (MANTISSA_HD: compiled for the device too).
#include "engine/util/host_device.h"

#include <cstdint>

namespace mantissa {

// The SplitMix64 finaliser (Steele, Lea and Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014): a bijection on 64 bits with full avalanche.
MANTISSA_HD constexpr std::uint64_t splitMix64(std::uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// The stream's starting state for `seed`; computed once per span, not per element.
MANTISSA_HD constexpr std::uint64_t stochasticStream(std::uint64_t seed)
{
    return splitMix64(seed ^ 0x5851f42d4c957f2dull);
}

// 64 uniform bits for element `counter` of `stream`.
MANTISSA_HD constexpr std::uint64_t stochasticBits(std::uint64_t stream, std::uint64_t counter)
{
    return splitMix64(stream + (counter + 1) * 0x9e3779b97f4a7c15ull);
}

} // namespace mantissa
