// Inverted dropout: y = x * mask with mask in {0, 1/(1-p)}, so evaluation needs no rescaling.
// The mask is a pure function of (seed, counter, element index) through a counter-based hash
// rather than a stateful generator: it does not depend on thread count or scheduling, a GPU
// kernel can produce the same mask, and a run repeats bit for bit.
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_view.h"
#include "engine/util/check.h"

namespace mantissa {

namespace {

// The splitmix64 finaliser: a bijection on 64 bits with full avalanche.
constexpr std::uint64_t mix64(std::uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Uniform in [0, 1) with 24 bits, from the key of one (seed, counter) pair and an index.
inline float uniformAt(std::uint64_t key, std::uint64_t index)
{
    const std::uint64_t bits = mix64(key + (index + 1) * 0x9e3779b97f4a7c15ull);
    return static_cast<float>(bits >> 40) * 0x1.0p-24f;
}

} // namespace

void CpuBackend::dropoutForward(const Tensor& x, Tensor& y, Tensor& mask, float p, std::uint64_t seed,
                                std::uint64_t counter)
{
    MANTISSA_ASSERT(p >= 0.0f && p < 1.0f);
    MANTISSA_ASSERT(x.numel() == y.numel() && mask.numel() == x.numel() && mask.dtype() == DType::F32);
    const std::uint64_t key = mix64(seed ^ mix64(counter + 0x632be59bd9b4e019ull));
    const float keep = 1.0f / (1.0f - p);
    cpu::FloatInput fx(x);
    cpu::FloatOutput fy(y);
    const float* in = fx.data();
    float* out = fy.data();
    float* m = mask.f32();
    const std::int64_t n = x.numel();
#pragma omp parallel for schedule(static) if (n > 65536)
    for (std::int64_t i = 0; i < n; ++i) {
        m[i] = uniformAt(key, static_cast<std::uint64_t>(i)) < p ? 0.0f : keep;
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
