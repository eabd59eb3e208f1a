// Quantising a GEMM operand on the device for the sub-16-bit recipes (issue 17), with the
// arithmetic the host shares (engine/numerics/quant_arithmetic.h), so that each value is the
// CPU quantiser's bit for bit. Emulation, not speed: an operand is quantised into fp32 or
// bf16 values that cuBLAS then multiplies; no FP8 or FP4 tensor-core GEMM is used.
//  - finiteAmaxKernel: the largest finite magnitude of the operand (per-tensor scaling and
//    NVFP4's tensor scale), as its fp32 bits through an integer atomicMax (bits of
//    non-negative floats order like the floats).
//  - quantizeBlocksKernel: one thread per block (1x16, 1x32, 1x128, a 16x16 or 128x128
//    tile); blocks are at most 16,384 values, and the recipes' operands hold thousands of
//    them, enough threads for an emulation. NVFP4 finishes its tensor-level plan from the
//    amax in device memory, so no value travels to the host.
//  - quantizeTensorKernel: per-tensor scaling, one value per thread with the plan the host
//    computed from the amax (the host needs the decode scale anyway, for the GEMM's alpha).
#include "engine/backend/cuda/device_numerics.cuh"
#include "engine/backend/cuda/kernels.h"
#include "engine/numerics/quant_arithmetic.h"

namespace mantissa::cuda {

namespace {

__global__ void finiteAmaxKernel(const void* x, DType xType, std::int64_t n, unsigned* amaxBits)
{
    unsigned largest = 0;
    for (std::int64_t i = firstIndex(); i < n; i += gridStride()) {
        const unsigned a = qa::bitsOf(loadAs(x, xType, i)) & qa::kAbsMask;
        if (a < qa::kInfinityBits)
            largest = max(largest, a);
    }
    atomicMax(amaxBits, largest);
}

__global__ void quantizeBlocksKernel(const void* src, DType srcType, void* dst, DType dstType, qa::OperandPlan plan,
                                     qa::OperandView view, qa::BlockGrid grid, std::int64_t blocks,
                                     const unsigned* tensorAmaxBits)
{
    if (tensorAmaxBits) { // NVFP4: amax(tensor) and S_enc
        plan.tensorAmax = qa::floatOf(*tensorAmaxBits);
        plan.tensorEncodeScale = qa::nvfp4TensorEncodeScale(plan.tensorAmax);
    }
    const auto load = [&](std::int64_t at) { return loadAs(src, srcType, at); };
    const auto store = [&](std::int64_t at, float v) { storeAs(dst, dstType, at, v); };
    for (std::int64_t b = firstIndex(); b < blocks; b += gridStride())
        qa::quantizeBlock(plan, view, grid, b, load, store);
}

__global__ void quantizeTensorKernel(const void* src, DType srcType, void* dst, DType dstType, std::int64_t n,
                                     qa::OperandPlan plan)
{
    for (std::int64_t i = firstIndex(); i < n; i += gridStride())
        storeAs(dst, dstType, i,
                plan.quantizeValue(loadAs(src, srcType, i), plan.tensorPlan, static_cast<std::uint64_t>(i)));
}

} // namespace

void launchFiniteAmax(const void* x, DType xType, std::int64_t n, unsigned* amaxBits, cudaStream_t stream)
{
    cudaMemsetAsync(amaxBits, 0, sizeof(unsigned), stream);
    if (n > 0)
        finiteAmaxKernel<<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(x, xType, n, amaxBits);
}

void launchQuantizeBlocks(const void* src, DType srcType, void* dst, DType dstType, const qa::OperandPlan& plan,
                          const qa::OperandView& view, const qa::BlockGrid& grid, const unsigned* tensorAmaxBits,
                          cudaStream_t stream)
{
    const std::int64_t blocks = grid.count(view);
    if (blocks > 0)
        quantizeBlocksKernel<<<blocksFor(blocks, 128), 128, 0, stream>>>(src, srcType, dst, dstType, plan, view, grid,
                                                                         blocks, tensorAmaxBits);
}

void launchQuantizeTensor(const void* src, DType srcType, void* dst, DType dstType, std::int64_t n,
                          const qa::OperandPlan& plan, cudaStream_t stream)
{
    if (n > 0)
        quantizeTensorKernel<<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(src, srcType, dst, dstType, n, plan);
}

} // namespace mantissa::cuda
