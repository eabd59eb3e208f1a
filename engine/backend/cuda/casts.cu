// Dtype conversion and fill on the device, matching CpuBackend::cast and CpuBackend::fill.
// A cast between equal dtypes copies the raw bits, as the CPU's memcpy does (a round trip
// through fp32 could rewrite NaN payloads). Any other pair widens exactly to fp32 and rounds
// to nearest even into the destination; fp16 <-> bf16 thereby takes the CPU's path through
// fp32, which holds both types exactly. A fill rounds the value once to the destination dtype.
#include "engine/backend/cuda/device_numerics.cuh"
#include "engine/backend/cuda/kernels.h"

namespace mantissa::cuda {

namespace {

template <typename Word>
__global__ void copyBits(const Word* src, Word* dst, std::int64_t n)
{
    for (std::int64_t i = firstIndex(); i < n; i += gridStride())
        dst[i] = src[i];
}

__global__ void convert(const void* src, DType srcType, void* dst, DType dstType, std::int64_t n)
{
    for (std::int64_t i = firstIndex(); i < n; i += gridStride())
        storeAs(dst, dstType, i, loadAs(src, srcType, i));
}

__global__ void fillWith(void* dst, DType dstType, std::int64_t n, float value)
{
    for (std::int64_t i = firstIndex(); i < n; i += gridStride())
        storeAs(dst, dstType, i, value);
}

} // namespace

void launchCast(const void* src, DType srcType, void* dst, DType dstType, std::int64_t n, cudaStream_t stream)
{
    if (n <= 0)
        return;
    if (srcType == dstType) {
        if (src == dst)
            return;
        if (srcType == DType::F32)
            copyBits<<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(static_cast<const std::uint32_t*>(src),
                                                                    static_cast<std::uint32_t*>(dst), n);
        else
            copyBits<<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(static_cast<const std::uint16_t*>(src),
                                                                    static_cast<std::uint16_t*>(dst), n);
        return;
    }
    convert<<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(src, srcType, dst, dstType, n);
}

void launchFill(void* dst, DType dstType, std::int64_t n, float value, cudaStream_t stream)
{
    if (n <= 0)
        return;
    fillWith<<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(dst, dstType, n, value);
}

} // namespace mantissa::cuda
