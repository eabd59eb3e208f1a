// Inverted dropout: y = x * mask with mask in {0, 1/(1-p)}, so evaluation needs no rescaling.
// The mask is a pure function of (seed, counter, element index) through a counter-based hash
// rather than a stateful generator: it does not depend on thread count or scheduling, a GPU
// kernel can produce the same mask, and a run repeats bit for bit.
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_view.h"
#include "engine/util/check.h"

namespace mantissa {

namespace {

// The splitmix64 finaliser: a bijection on 64 bits with full avalanche; turns (seed, counter)
// into the key of one mask.
constexpr std::uint64_t mix64(std::uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Chris Wellons' lowbias32: a 32-bit bijection of near-ideal avalanche. 32-bit multiplies
// vectorise (AVX2 has no 64-bit one), so the per-element hash costs about a cycle.
constexpr std::uint32_t mix32(std::uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

// Uniform in [0, 1) with 24 bits for element `index` under the two 32-bit halves of a key.
// Each round is a bijection of the index, so no two elements of one mask share a draw.
inline float uniformAt(std::uint32_t key0, std::uint32_t key1, std::uint32_t index)
{
    return static_cast<float>(mix32(mix32(index ^ key0) + key1) >> 8) * 0x1.0p-24f;
}

} // namespace

void CpuBackend::dropoutForward(const Tensor& x, Tensor& y, Tensor& mask, float p, std::uint64_t seed,
                                std::uint64_t counter)
{
    MANTISSA_ASSERT(p >= 0.0f && p < 1.0f);
    MANTISSA_ASSERT(x.numel() == y.numel() && mask.numel() == x.numel() && mask.dtype() == DType::F32);
    MANTISSA_ASSERT(x.numel() <= (std::int64_t{1} << 32)); // indices are hashed as 32 bits
    const std::uint64_t key = mix64(seed ^ mix64(counter + 0x632be59bd9b4e019ull));
    const auto key0 = static_cast<std::uint32_t>(key), key1 = static_cast<std::uint32_t>(key >> 32);
    const float keep = 1.0f / (1.0f - p);
    cpu::FloatInput fx(x);
    cpu::FloatOutput fy(y);
    const float* in = fx.data();
    float* out = fy.data();
    float* m = mask.f32();
    const std::int64_t n = x.numel();
#pragma omp parallel for schedule(static) if (n > 65536)
    for (std::int64_t i = 0; i < n; ++i) {
        m[i] = uniformAt(key0, key1, static_cast<std::uint32_t>(i)) < p ? 0.0f : keep;
        out[i] = in[i] * m[i];
    }
    fy.commit();
}

void CpuBackend::dropoutBackward(const Tensor& dy, const Tensor& mask, Tensor& dx)
{
    MANTISSA_ASSERT(dy.numel() == dx.numel() && mask.numel() == dy.numel() && mask.dtype() == DType::F32);
    cpu::FloatInput fdy(dy);
    cpu::FloatOutput fdx(dx);
    const float* g = fdy.data();
    const float* m = mask.f32();
    float* out = fdx.data();
    const std::int64_t n = dy.numel();
#pragma omp parallel for schedule(static) if (n > 65536)
    for (std::int64_t i = 0; i < n; ++i)
        out[i] = g[i] * m[i];
    fdx.commit();
}

} // namespace mantissa
