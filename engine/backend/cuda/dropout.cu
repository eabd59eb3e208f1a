// Inverted dropout, as CpuBackend::dropoutForward/Backward: element i is dropped when
// dropout::uniformAt(key, i) < p and otherwise scaled by 1 / (1 - p). The hash is the CPU's
// own header and the keep factor is computed on the host in fp32 exactly as the CPU does,
// so the mask is bit-identical; y = x * mask and dx = dy * mask round once to their dtypes.
#include "engine/backend/cuda/device_numerics.cuh"
#include "engine/backend/cuda/kernels.h"

namespace mantissa::cuda {

namespace {

__global__ void dropoutForwardKernel(const void* x, DType xType, void* y, DType yType, float* mask, std::int64_t n,
                                     float p, float keep, dropout::Key key)
{
    for (std::int64_t i = firstIndex(); i < n; i += gridStride()) {
        // Indices hash as 32 bits, as on the CPU (which limits a mask to 2^32 elements).
        const float m = dropout::uniformAt(key, static_cast<std::uint32_t>(i)) < p ? 0.0f : keep;
        mask[i] = m;
        storeAs(y, yType, i, loadAs(x, xType, i) * m);
    }
}

__global__ void dropoutBackwardKernel(const void* dy, DType dyType, const float* mask, void* dx, DType dxType,
                                      std::int64_t n)
{
    for (std::int64_t i = firstIndex(); i < n; i += gridStride())
        storeAs(dx, dxType, i, loadAs(dy, dyType, i) * mask[i]);
}

} // namespace

void launchDropoutForward(const void* x, DType xType, void* y, DType yType, float* mask, std::int64_t n, float p,
                          dropout::Key key, cudaStream_t stream)
{
    if (n <= 0)
        return;
    const float keep = 1.0f / (1.0f - p);
    dropoutForwardKernel<<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(x, xType, y, yType, mask, n, p, keep, key);
}

void launchDropoutBackward(const void* dy, DType dyType, const float* mask, void* dx, DType dxType, std::int64_t n,
                           cudaStream_t stream)
{
    if (n <= 0)
        return;
    dropoutBackwardKernel<<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(dy, dyType, mask, dx, dxType, n);
}

} // namespace mantissa::cuda
