// Inverted dropout: y = x * mask with mask in {0, 1/(1-p)}, so evaluation needs no rescaling.
// The mask comes from backend/dropout_hash.h, shared with the CUDA kernel.
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_view.h"
#include "engine/backend/dropout_hash.h"
#include "engine/util/check.h"

namespace mantissa {

void CpuBackend::dropoutForward(const Tensor& x, Tensor& y, Tensor& mask, float p, std::uint64_t seed,
                                std::uint64_t counter)
{
    MANTISSA_ASSERT(p >= 0.0f && p < 1.0f);
    MANTISSA_ASSERT(x.numel() == y.numel() && mask.numel() == x.numel() && mask.dtype() == DType::F32);
    MANTISSA_ASSERT(x.numel() <= (std::int64_t{1} << 32)); // indices are hashed as 32 bits
    const dropout::Key key = dropout::maskKey(seed, counter);
    const float keep = 1.0f / (1.0f - p);
    cpu::FloatInput fx(x);
    cpu::FloatOutput fy(y);
    const float* in = fx.data();
    float* out = fy.data();
    float* m = mask.f32();
    const std::int64_t n = x.numel();
#pragma omp parallel for schedule(static) if (n > 65536)
    for (std::int64_t i = 0; i < n; ++i) {
        m[i] = dropout::uniformAt(key, static_cast<std::uint32_t>(i)) < p ? 0.0f : keep;
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
