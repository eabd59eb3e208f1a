// out = a + b, as CpuBackend::add: both widened to fp32, the sum rounded once to out's dtype.
// Each thread reads a[i] and b[i] before writing out[i], so out may alias a (or b).
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

} // namespace

void launchAdd(const void* a, DType aType, const void* b, DType bType, void* out, DType outType, std::int64_t n,
               cudaStream_t stream)
{
    if (n <= 0)
        return;
    addKernel<<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(a, aType, b, bType, out, outType, n);
}

} // namespace mantissa::cuda
