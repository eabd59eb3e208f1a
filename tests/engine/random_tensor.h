#pragma once
// A tensor of standard-normal values drawn from `seed`, rounded into `type` on `backend`: the
// operands the kernel tests multiply.
#include "engine/backend/backend.h"

#include <cstdint>
#include <random>
#include <vector>

namespace mantissa::test_support {

inline Tensor uploadRandom(Backend& backend, const Shape& shape, DType type, std::uint32_t seed)
{
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> values(static_cast<std::size_t>(shape.numel()));
    for (float& v : values)
        v = dist(rng);
    Tensor t = backend.empty(shape, type);
    backend.upload(values.data(), t);
    return t;
}

} // namespace mantissa::test_support
