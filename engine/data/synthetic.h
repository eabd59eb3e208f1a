#pragma once
// A learnable synthetic classification dataset for benchmarks and tests: every class has a
// fixed random prototype (std 1 per element) and a sample is its class's prototype plus
// Gaussian noise. Any per-sample shape and class count; a pure function of its arguments.
#include "engine/data/dataset.h"

#include <cstdint>
#include <string>

namespace mantissa {

// `size` samples with labels 0, 1, ..., classes-1, 0, 1, ... (balanced). The prototypes depend
// on `seed` only; the noise on (seed, split), so the train (split 0) and test (split 1) sets
// are different samples of the same distribution.
Dataset makeSyntheticDataset(const Shape& sampleShape, std::int64_t classes, std::int64_t size, float noise,
                             std::uint64_t seed, std::uint64_t split, const std::string& name);

} // namespace mantissa
