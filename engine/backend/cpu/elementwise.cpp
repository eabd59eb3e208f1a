#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_chunks.h"
#include "engine/util/check.h"

namespace mantissa {

void CpuBackend::add(const Tensor& a, const Tensor& b, Tensor& out)
{
    MANTISSA_ASSERT(a.numel() == b.numel() && a.numel() == out.numel());
    cpu::forFloatChunks<2, 1>(static_cast<std::size_t>(out.numel()), {&a, &b}, {&out},
                              [](auto in, auto sum, std::size_t n) {
                                  for (std::size_t i = 0; i < n; ++i)
                                      sum[0][i] = in[0][i] + in[1][i];
                              });
}

} // namespace mantissa
