#pragma once
// The dropout mask as a pure function of (seed, counter, element index), shared by the CPU
// backend and the CUDA kernels so that both draw the same mask and a run repeats bit for
// bit on either: a counter-based hash rather than a stateful generator, so the mask does
// not depend on thread count or scheduling.
#include <cstdint>

#if defined(__CUDACC__)
#define MANTISSA_HOST_DEVICE __host__ __device__
#else
#define MANTISSA_HOST_DEVICE
#endif

namespace mantissa::dropout {

// The splitmix64 finaliser: a bijection on 64 bits with full avalanche; turns (seed, counter)
// into the key of one mask.
MANTISSA_HOST_DEVICE constexpr std::uint64_t mix64(std::uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Chris Wellons' lowbias32: a 32-bit bijection of near-ideal avalanche. 32-bit multiplies
// vectorise (AVX2 has no 64-bit one), so the per-element hash costs about a cycle.
MANTISSA_HOST_DEVICE constexpr std::uint32_t mix32(std::uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

struct Key {
    std::uint32_t k0, k1;
};

// The key of the mask drawn at (seed, counter).
MANTISSA_HOST_DEVICE constexpr Key maskKey(std::uint64_t seed, std::uint64_t counter)
{
    const std::uint64_t key = mix64(seed ^ mix64(counter + 0x632be59bd9b4e019ull));
    return {static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32)};
}

// Uniform in [0, 1) with 24 bits for element `index` under a key. Each round is a bijection
// of the index, so no two elements of one mask share a draw.
MANTISSA_HOST_DEVICE inline float uniformAt(Key key, std::uint32_t index)
{
    return static_cast<float>(mix32(mix32(index ^ key.k0) + key.k1) >> 8) * 0x1.0p-24f;
}

} // namespace mantissa::dropout
