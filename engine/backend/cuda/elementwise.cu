// out = a + b, as CpuBackend::add: both widened to fp32, the sum rounded once to out's dtype.
// Each thread reads a[i] and b[i] before writing out[i], so out may alias a (or b).
// x *= factor in fp32 (__fmul_rn: one rounding, never fused with a later add), as the CPU's
// output_scale applies the FP8 decode scales to a convolution's fp32 sums.
#include "engine/backend/cuda/device_numerics.cuh"
#include "engine/backend/cuda/kernels.h"

namespace mantissa::cuda {

namespace {

__global__ void addKernel(const void* a, DType aType, const void* b, DType bType, void* out, DType outType,
                          std::int64_t n)
{
    for (std::int64_t i = firstIndex(); i < n; i += gridStride())
        storeAs(out, outType, i, loadAs(a, aType, i) + loadAs(b, bType, i));
}

__global__ void scaleKernel(float* x, std::int64_t n, float factor)
{
    for (std::int64_t i = firstIndex(); i < n; i += gridStride())
        x[i] = __fmul_rn(x[i], factor);
}

} // namespace

void launchScale(float* x, std::int64_t n, float factor, cudaStream_t stream)
{
    if (n <= 0)
        return;
    scaleKernel<<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(x, n, factor);
}

void launchAdd(const void* a, DType aType, const void* b, DType bType, void* out, DType outType, std::int64_t n,
               cudaStream_t stream)
{
    if (n <= 0)
        return;
    addKernel<<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(a, aType, b, bType, out, outType, n);
}

} // namespace mantissa::cuda
