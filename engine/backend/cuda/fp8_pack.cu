// Packing FP8 elements (bf16 numbers, as quantizeOperand writes them) into the 8-bit codes
// cuBLASLt's FP8 matmul reads, K contiguous (kernels.h, launchPackFp8). The conversion has
// nothing to round (fp8_codes.h); a packed operand is exactly the elements the emulated GEMM
// multiplies. An operand whose K runs down its columns is transposed on the way through a
// 32 x 32 tile in shared memory, so that reads and writes both stay coalesced.
#include "engine/backend/cuda/device_numerics.cuh"
#include "engine/backend/cuda/fp8_codes.h"
#include "engine/backend/cuda/kernels.h"

#include <algorithm>

namespace mantissa::cuda {

namespace {

constexpr int kTile = 32;
constexpr int kTileRows = 8; // threads per tile column: each thread packs kTile / kTileRows values

__global__ void packFp8Kernel(const std::uint16_t* src, std::uint8_t* dst, std::int64_t n, bool e5m2)
{
    for (std::int64_t i = firstIndex(); i < n; i += gridStride())
        dst[i] = fp8CodeOfBf16(src[i], e5m2);
}

// src is [k, rows]; dst [rows, k]. Block (x, y) moves the tiles of src columns x*32.. (along
// rows) and rows y*32.. (along k), then those gridDim.y tiles further down K (a grid's y
// extent stops at 65,535). The +1 column keeps the tile's columns in distinct banks.
__global__ void packFp8TransposedKernel(const std::uint16_t* src, std::uint8_t* dst, std::int64_t rows, std::int64_t k,
                                        bool e5m2)
{
    __shared__ std::uint8_t tile[kTile][kTile + 1];
    const std::int64_t srcCol0 = static_cast<std::int64_t>(blockIdx.x) * kTile;
    for (std::int64_t srcRow0 = static_cast<std::int64_t>(blockIdx.y) * kTile; srcRow0 < k;
         srcRow0 += static_cast<std::int64_t>(gridDim.y) * kTile) {
        for (int r = threadIdx.y; r < kTile; r += kTileRows) {
            const std::int64_t kk = srcRow0 + r, col = srcCol0 + threadIdx.x;
            if (kk < k && col < rows)
                tile[r][threadIdx.x] = fp8CodeOfBf16(src[kk * rows + col], e5m2);
        }
        __syncthreads();
        for (int r = threadIdx.y; r < kTile; r += kTileRows) {
            const std::int64_t row = srcCol0 + r, kk = srcRow0 + threadIdx.x;
            if (row < rows && kk < k)
                dst[row * k + kk] = tile[threadIdx.x][r];
        }
        __syncthreads(); // the tile is refilled next round
    }
}

} // namespace

void launchPackFp8(const std::uint16_t* src, std::uint8_t* dst, std::int64_t rows, std::int64_t k, bool transposed,
                   bool e5m2, cudaStream_t stream)
{
    const std::int64_t n = rows * k;
    if (n == 0)
        return;
    if (!transposed) {
        packFp8Kernel<<<blocksFor(n), kThreadsPerBlock, 0, stream>>>(src, dst, n, e5m2);
        return;
    }
    const std::int64_t tilesAlongK = std::min<std::int64_t>((k + kTile - 1) / kTile, 65535);
    const dim3 grid(static_cast<unsigned>((rows + kTile - 1) / kTile), static_cast<unsigned>(tilesAlongK));
    packFp8TransposedKernel<<<grid, dim3(kTile, kTileRows), 0, stream>>>(src, dst, rows, k, e5m2);
}

} // namespace mantissa::cuda
