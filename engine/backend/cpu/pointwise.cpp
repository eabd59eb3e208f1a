// The pointwise functions with parameters (engine/backend/pointwise_function.h): fp32
// arithmetic on each value, rounded once to the output's dtype, chunk by chunk.
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cpu/float_chunks.h"
#include "engine/util/check.h"

namespace mantissa {

void CpuBackend::pointwiseForward(const PointwiseFunction& f, const Tensor& x, Tensor& y)
{
    MANTISSA_ASSERT(x.numel() == y.numel());
    cpu::forFloatChunks<1, 1>(static_cast<std::size_t>(x.numel()), {&x}, {&y}, [&f](auto in, auto out, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i)
            out[0][i] = pointwiseValue(f, in[0][i]);
    });
}

void CpuBackend::pointwiseBackward(const PointwiseFunction& f, const Tensor& x, const Tensor& dy, Tensor& dx)
{
    MANTISSA_ASSERT(x.numel() == dy.numel() && dy.numel() == dx.numel());
    cpu::forFloatChunks<2, 1>(static_cast<std::size_t>(dy.numel()), {&x, &dy}, {&dx},
                              [&f](auto in, auto out, std::size_t n) {
                                  for (std::size_t i = 0; i < n; ++i)
                                      out[0][i] = pointwiseGradient(f, in[0][i], in[1][i]);
                              });
}

} // namespace mantissa
