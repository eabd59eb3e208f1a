// Bias addition and bias gradients for [rows, cols] (after a GEMM) and NCHW (after a
// convolution). Additions widen y and the bias to fp32 and round the sum once into y; a
// linear layer's GEMM result is fp32 when it gets here (CudaBackend::gemmRowBias), so a
// 16-bit output is rounded only once, by the cast after it, as on the CPU. Gradients sum dy in fp32 and round once into dbias. The CPU
// sums a row bias serially and a conv bias in fp32 blocks folded into a double; these kernels
// sum in per-thread fp32 partials combined by a fixed tree, so they agree with the CPU to
// fp32 rounding of the sum, not bit for bit. Each output is reduced by one block in a fixed
// order without atomics, so a given shape gives the same bits on every run.
#include "engine/backend/cuda/device_numerics.cuh"
#include "engine/backend/cuda/kernels.h"

namespace mantissa::cuda {

namespace {

// Threads of one reducing block: enough loads in flight per SM without a second pass.
constexpr int kReduceThreads = 512;
constexpr int kWarpSize = 32;
// Blocks for one reduction launch; blocks loop over further outputs beyond it.
constexpr std::int64_t kMaxReduceBlocks = 65535;
// Column tiles worth having for a row-bias gradient: about two blocks per SM of a large GPU.
constexpr std::int64_t kWantedTiles = 256;

// y[i] += bias[i % cols]. The column is advanced with the grid stride rather than recomputed,
// since a 64-bit modulo per element would cost more than the memory traffic.
__global__ void addRowBiasKernel(void* y, DType yType, const void* bias, DType biasType, std::int64_t n,
                                 std::int64_t cols)
{
    const std::int64_t stride = gridStride();
    const std::int64_t columnStep = stride % cols;
    std::int64_t i = firstIndex();
    std::int64_t c = i % cols;
    for (; i < n; i += stride) {
        storeAs(y, yType, i, loadAs(y, yType, i) + loadAs(bias, biasType, c));
        c += columnStep;
        if (c >= cols)
            c -= cols;
    }
}

// y[i] += bias[(i / plane) % channels], tracking the position within the plane and the
// channel incrementally for the same reason.
__global__ void addChannelBiasKernel(void* y, DType yType, const void* bias, DType biasType, std::int64_t n,
                                     std::int64_t channels, std::int64_t plane)
{
    const std::int64_t stride = gridStride();
    const std::int64_t pixelStep = stride % plane;
    const std::int64_t channelStep = (stride / plane) % channels;
    std::int64_t i = firstIndex();
    std::int64_t pixel = i % plane;
    std::int64_t c = (i / plane) % channels;
    for (; i < n; i += stride) {
        storeAs(y, yType, i, loadAs(y, yType, i) + loadAs(bias, biasType, c));
        pixel += pixelStep;
        const std::int64_t carry = pixel >= plane ? 1 : 0;
        pixel -= carry * plane;
        c += channelStep + carry; // below 2 * channels, so one wrap suffices
        if (c >= channels)
            c -= channels;
    }
}

// Column sums of dy [rows, cols]. A block is a tile of blockDim.x adjacent columns (so a warp
// reads consecutive addresses) by blockDim.y row lanes (a power of two); each thread sums
// every blockDim.y-th row of its column, and the row lanes are then folded pairwise.
__global__ void rowBiasGradKernel(const void* dy, DType dyType, void* dbias, DType dbiasType, std::int64_t rows,
                                  std::int64_t cols)
{
    __shared__ float partial[kReduceThreads];
    const unsigned tx = threadIdx.x, ty = threadIdx.y, width = blockDim.x;
    const std::int64_t tileStride = static_cast<std::int64_t>(gridDim.x) * width;
    for (std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * width; first < cols; first += tileStride) {
        const std::int64_t c = first + tx;
        float sum = 0.0f;
        if (c < cols) {
#pragma unroll 4
            for (std::int64_t r = ty; r < rows; r += blockDim.y)
                sum += loadAs(dy, dyType, r * cols + c);
        }
        partial[ty * width + tx] = sum;
        __syncthreads();
        for (unsigned half = blockDim.y / 2; half > 0; half /= 2) {
            if (ty < half)
                partial[ty * width + tx] += partial[(ty + half) * width + tx];
            __syncthreads();
        }
        if (ty == 0 && c < cols)
            storeAs(dbias, dbiasType, c, partial[tx]);
        __syncthreads(); // the next tile reuses `partial`
    }
}

// Sum of v over the kReduceThreads threads of a 1-D block, in a fixed order: shuffles within
// each warp, then the warp sums by warp 0. Valid in thread 0; every thread must call it.
__device__ float blockSum(float v)
{
    constexpr int kWarps = kReduceThreads / kWarpSize;
    __shared__ float warpSums[kWarps];
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    const unsigned lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    if (lane == 0)
        warpSums[warp] = v;
    __syncthreads();
    v = 0.0f;
    if (warp == 0) {
        v = lane < kWarps ? warpSums[lane] : 0.0f;
        for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
            v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    __syncthreads(); // the next call reuses `warpSums`
    return v;
}

// One block per channel of dy [batch, channels, plane]. The block walks the channel's
// batch * plane values as one flat range (so small planes, even plane = 1, keep every thread
// busy), advancing (image, pixel) by the block size instead of dividing per element.
__global__ void channelBiasGradKernel(const void* dy, DType dyType, void* dbias, DType dbiasType, std::int64_t batch,
                                      std::int64_t channels, std::int64_t plane)
{
    const std::int64_t pixelStep = blockDim.x % plane, imageStep = blockDim.x / plane;
    for (std::int64_t c = blockIdx.x; c < channels; c += gridDim.x) {
        std::int64_t image = threadIdx.x / plane, pixel = threadIdx.x % plane;
        float sum = 0.0f;
        while (image < batch) {
            sum += loadAs(dy, dyType, (image * channels + c) * plane + pixel);
            pixel += pixelStep;
            image += imageStep;
            if (pixel >= plane) {
                pixel -= plane;
                ++image;
            }
        }
        sum = blockSum(sum);
        if (threadIdx.x == 0)
            storeAs(dbias, dbiasType, c, sum);
    }
}

// The block shape of rowBiasGradKernel: columns (a power of two) by row lanes.
dim3 rowGradTile(std::int64_t rows, std::int64_t cols)
{
    // Up to a warp of columns, and no more than the matrix has.
    unsigned width = 1;
    while (width < static_cast<unsigned>(kWarpSize) && static_cast<std::int64_t>(width) < cols)
        width *= 2;
    // Narrower tiles spread a matrix of a few hundred columns over more SMs; eight fp32
    // columns still read whole 32-byte sectors.
    while (width > 8 && (cols + width - 1) / width < kWantedTiles)
        width /= 2;
    unsigned height = kReduceThreads / width;
    // With few rows, idle row lanes are better spent on more columns.
    while (height > 1 && height / 2 >= rows && static_cast<std::int64_t>(width) < cols) {
        height /= 2;
        width *= 2;
    }
    return dim3(width, height);
}

unsigned reduceBlocks(std::int64_t outputs)
{
    return static_cast<unsigned>(outputs < kMaxReduceBlocks ? outputs : kMaxReduceBlocks);
}

} // namespace

void launchAddRowBias(void* y, DType yType, const void* bias, DType biasType, std::int64_t rows, std::int64_t cols,
                      cudaStream_t stream)
{
    const std::int64_t n = rows * cols;
    if (n <= 0)
        return;
    addRowBiasKernel<<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(y, yType, bias, biasType, n, cols);
}

void launchRowBiasGrad(const void* dy, DType dyType, void* dbias, DType dbiasType, std::int64_t rows, std::int64_t cols,
                       cudaStream_t stream)
{
    if (cols <= 0)
        return;
    const dim3 block = rowGradTile(rows, cols);
    const std::int64_t tiles = (cols + block.x - 1) / block.x;
    // rows == 0 still launches, so dbias is written as zeros like the CPU's.
    rowBiasGradKernel<<<reduceBlocks(tiles), block, 0, stream>>>(dy, dyType, dbias, dbiasType, rows, cols);
}

void launchAddChannelBias(void* y, DType yType, const void* bias, DType biasType, std::int64_t batch,
                          std::int64_t channels, std::int64_t plane, cudaStream_t stream)
{
    const std::int64_t n = batch * channels * plane;
    if (n <= 0)
        return;
    addChannelBiasKernel<<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(y, yType, bias, biasType, n, channels, plane);
}

void launchChannelBiasGrad(const void* dy, DType dyType, void* dbias, DType dbiasType, std::int64_t batch,
                           std::int64_t channels, std::int64_t plane, cudaStream_t stream)
{
    if (channels <= 0 || plane <= 0)
        return;
    channelBiasGradKernel<<<reduceBlocks(channels), kReduceThreads, 0, stream>>>(dy, dyType, dbias, dbiasType, batch,
                                                                                 channels, plane);
}

} // namespace mantissa::cuda
