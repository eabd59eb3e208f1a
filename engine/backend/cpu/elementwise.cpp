#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_view.h"
#include "engine/util/check.h"

namespace mantissa {

void CpuBackend::add(const Tensor& a, const Tensor& b, Tensor& out)
{
    MANTISSA_ASSERT(a.numel() == b.numel() && a.numel() == out.numel());
    cpu::FloatInput fa(a);
    cpu::FloatInput fb(b);
    cpu::FloatOutput fo(out);
    const float* pa = fa.data();
    const float* pb = fb.data();
    float* po = fo.data();
    const auto n = static_cast<std::int64_t>(fo.size());
#pragma omp parallel for schedule(static) if (n > 65536)
    for (std::int64_t i = 0; i < n; ++i)
        po[i] = pa[i] + pb[i];
    fo.commit();
}

} // namespace mantissa
