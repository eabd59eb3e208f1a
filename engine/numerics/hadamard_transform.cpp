#include "engine/numerics/hadamard_transform.h"

#include "engine/numerics/stochastic_bits.h"

#include <bit>

namespace mantissa {

namespace {

// One group: D first, then the fast Walsh-Hadamard transform (the Sylvester order, so the
// result is H (D v)), then the exact scaling by 1/4 = 1/sqrt(16).
void rotateGroup(float* v, std::uint16_t signs)
{
    for (std::size_t j = 0; j < kHadamardSize; ++j)
        if (signs >> j & 1u)
            v[j] = -v[j];
    for (std::size_t half = 1; half < kHadamardSize; half *= 2)
        for (std::size_t i = 0; i < kHadamardSize; i += 2 * half)
            for (std::size_t j = i; j < i + half; ++j) {
                const float a = v[j], b = v[j + half];
                v[j] = a + b;
                v[j + half] = a - b;
            }
    for (std::size_t j = 0; j < kHadamardSize; ++j)
        v[j] *= 0.25f;
}

} // namespace

std::uint16_t hadamardSigns(std::uint64_t seed)
{
    // A stream of its own, apart from the stochastic-rounding bits drawn from the same seed.
    return static_cast<std::uint16_t>(splitMix64(splitMix64(seed ^ 0x48616461'6d617264ull)) >> 24);
}

void hadamardTransformRow(std::span<float> values, std::uint16_t signs)
{
    for (std::size_t begin = 0; begin + kHadamardSize <= values.size(); begin += kHadamardSize)
        rotateGroup(values.data() + begin, signs);
}

void hadamardTransformColumns(float* rows, std::size_t stride, std::size_t columns, std::uint16_t signs)
{
    for (std::size_t j = 0; j < kHadamardSize; ++j)
        if (signs >> j & 1u)
            for (float* v = rows + j * stride; v != rows + j * stride + columns; ++v)
                *v = -*v;
    for (std::size_t half = 1; half < kHadamardSize; half *= 2)
        for (std::size_t i = 0; i < kHadamardSize; i += 2 * half)
            for (std::size_t j = i; j < i + half; ++j) {
                float* a = rows + j * stride;
                float* b = rows + (j + half) * stride;
                for (std::size_t c = 0; c < columns; ++c) {
                    const float x = a[c], y = b[c];
                    a[c] = x + y;
                    b[c] = x - y;
                }
            }
    for (std::size_t j = 0; j < kHadamardSize; ++j)
        for (float* v = rows + j * stride; v != rows + j * stride + columns; ++v)
            *v *= 0.25f;
}

void hadamardMatrix(std::uint16_t signs, std::span<float, kHadamardSize * kHadamardSize> out)
{
    for (std::size_t i = 0; i < kHadamardSize; ++i)
        for (std::size_t j = 0; j < kHadamardSize; ++j) {
            const bool negative = (std::popcount(i & j) & 1) != ((signs >> j & 1u) != 0);
            out[i * kHadamardSize + j] = negative ? -0.25f : 0.25f;
        }
}

} // namespace mantissa
