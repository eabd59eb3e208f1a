#pragma once
// Normal values drawn from `seed`, as a vector or as a tensor rounded into `type` on `backend`:
// the operands and gradients the kernel and step tests feed in.
#include "engine/backend/backend.h"

#include <cstdint>
#include <random>
#include <vector>

namespace mantissa::test_support {

// `count` values of a normal distribution with mean 0 and standard deviation `scale`.
inline std::vector<float> randomValues(std::size_t count, std::uint32_t seed, float scale = 1.0f)
{
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> values(count);
    for (float& v : values)
        v = dist(rng);
    return values;
}

inline Tensor uploadRandom(Backend& backend, const Shape& shape, DType type, std::uint32_t seed)
{
    const std::vector<float> values = randomValues(static_cast<std::size_t>(shape.numel()), seed);
    Tensor t = backend.empty(shape, type);
    backend.upload(values.data(), t);
    return t;
}

} // namespace mantissa::test_support
