// The pointwise functions with parameters (engine/backend/pointwise_function.h), with the
// CPU's formulas themselves: fp32 arithmetic without library calls, so both backends give the
// same bits.
#include "engine/backend/cuda/device_numerics.cuh"
#include "engine/backend/cuda/kernels.h"

namespace mantissa::cuda {

namespace {

__global__ void pointwiseForwardKernel(PointwiseFunction f, const void* x, DType xType, void* y, DType yType,
                                       std::int64_t n)
{
    for (std::int64_t i = firstIndex(); i < n; i += gridStride())
        storeAs(y, yType, i, pointwiseValue(f, loadAs(x, xType, i)));
}

__global__ void pointwiseBackwardKernel(PointwiseFunction f, const void* x, DType xType, const void* dy, DType dyType,
                                        void* dx, DType dxType, std::int64_t n)
{
    for (std::int64_t i = firstIndex(); i < n; i += gridStride())
        storeAs(dx, dxType, i, pointwiseGradient(f, loadAs(x, xType, i), loadAs(dy, dyType, i)));
}

} // namespace

void launchPointwiseForward(const PointwiseFunction& f, const void* x, DType xType, void* y, DType yType,
                            std::int64_t n, cudaStream_t stream)
{
    if (n > 0)
        pointwiseForwardKernel<<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(f, x, xType, y, yType, n);
}

void launchPointwiseBackward(const PointwiseFunction& f, const void* x, DType xType, const void* dy, DType dyType,
                             void* dx, DType dxType, std::int64_t n, cudaStream_t stream)
{
    if (n > 0)
        pointwiseBackwardKernel<<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(f, x, xType, dy, dyType, dx, dxType, n);
}

} // namespace mantissa::cuda
