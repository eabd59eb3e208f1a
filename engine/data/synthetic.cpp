#include "engine/data/synthetic.h"

#include "engine/util/check.h"

#include <cmath>
#include <numbers>

namespace mantissa {

namespace {

// splitmix64's finaliser: a bijection that scatters neighbouring counters across 64 bits.
std::uint64_t mix(std::uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

// A counter-based generator: value i of a stream is a function of (stream, i) alone, so the
// loops below can run in parallel and still give the same data for every thread count.
float gaussian(std::uint64_t stream, std::uint64_t index)
{
    const std::uint64_t a = mix(stream ^ mix(2 * index));
    const std::uint64_t b = mix(stream ^ mix(2 * index + 1));
    // 24-bit uniforms in (0, 1): never 0, so the logarithm is finite.
    const float u1 = (static_cast<float>(a >> 40) + 0.5f) * 0x1p-24f;
    const float u2 = (static_cast<float>(b >> 40) + 0.5f) * 0x1p-24f;
    return std::sqrt(-2.0f * std::log(u1)) * std::cos(2.0f * std::numbers::pi_v<float> * u2);
}

std::uint64_t streamKey(std::uint64_t seed, std::uint64_t purpose) { return mix(mix(seed) ^ mix(purpose + 0x5eed)); }

} // namespace

Dataset makeSyntheticDataset(const Shape& sampleShape, std::int64_t classes, std::int64_t size, float noise,
                             std::uint64_t seed, std::uint64_t split, const std::string& name)
{
    MANTISSA_ASSERT(classes > 0 && size >= 0 && sampleShape.numel() > 0);
    Dataset d;
    d.sampleShape = sampleShape;
    d.classes = classes;
    d.name = name;
    const std::int64_t n = sampleShape.numel();

    std::vector<float> prototypes(static_cast<std::size_t>(classes * n));
    const std::uint64_t protoStream = streamKey(seed, 0);
    for (std::int64_t i = 0; i < classes * n; ++i)
        prototypes[static_cast<std::size_t>(i)] = gaussian(protoStream, static_cast<std::uint64_t>(i));

    d.labels.resize(static_cast<std::size_t>(size));
    d.inputs.resize(static_cast<std::size_t>(size * n));
    const std::uint64_t noiseStream = streamKey(seed, split + 1);
#pragma omp parallel for schedule(static) if (size * n > 65536)
    for (std::int64_t s = 0; s < size; ++s) {
        const std::int64_t label = s % classes;
        d.labels[static_cast<std::size_t>(s)] = static_cast<float>(label);
        const float* proto = prototypes.data() + label * n;
        float* x = d.inputs.data() + s * n;
        for (std::int64_t j = 0; j < n; ++j)
            x[j] = proto[j] + noise * gaussian(noiseStream, static_cast<std::uint64_t>(s * n + j));
    }
    return d;
}

} // namespace mantissa
