#include "engine/backend/cpu/channel_blocks.h"

#include "engine/numerics/conversions.h"
#include "engine/util/check.h"

#if defined(__x86_64__) && defined(__GNUC__)
// As in conversions_avx512.cpp: GCC 12's AVX-512 headers trip -Wuninitialized (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define MANTISSA_CHANNEL_BLOCKS_AVX512 1
#endif

namespace mantissa::cpu {

namespace {

constexpr std::int64_t kBlock = 16;

#ifdef MANTISSA_CHANNEL_BLOCKS_AVX512
// r[i] holds row i of a 16 x 16 matrix of 32-bit values; afterwards r[i] holds column i.
__attribute__((target("avx512f"))) inline void transpose16x16(__m512i r[16])
{
    __m512i t[16];
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; ++i) {
        r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int i = 0; i < 4; ++i) {
        t[i] = _mm512_shuffle_i32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_i32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_i32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_i32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 8; ++i) {
        r[i] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0xdd);
    }
}

// One 16 x 16 tile from rows `in` (stride inStride) to rows `out` (stride outStride),
// transposed; 16-bit values travel zero-extended in 32-bit lanes.
template <typename T>
__attribute__((target("avx512f"))) inline void transposeTile(const T* in, std::int64_t inStride, T* out,
                                                             std::int64_t outStride)
{
    __m512i r[16];
    for (int i = 0; i < 16; ++i) {
        if constexpr (sizeof(T) == 4)
            r[i] = _mm512_loadu_si512(in + i * inStride);
        else
            r[i] = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i * inStride)));
    }
    transpose16x16(r);
    for (int i = 0; i < 16; ++i) {
        if constexpr (sizeof(T) == 4)
            _mm512_storeu_si512(out + i * outStride, r[i]);
        else
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i * outStride), _mm512_cvtepi32_epi16(r[i]));
    }
}
#endif

// One [16 channels x pixels] slab: plane j of `planes` (stride `pixels`) becomes lane j of
// each pixel's 16 values in `pixelsOut`. With AVX-512 (the same switch as the conversions',
// allowAvx512Conversions) whole tiles of 16 pixels are transposed in registers; the pixels
// left over, and every pixel without it, move one at a time.
template <typename T>
void slabToBlocks(const T* planes, T* pixelsOut, std::int64_t pixels)
{
    std::int64_t s = 0;
#ifdef MANTISSA_CHANNEL_BLOCKS_AVX512
    if (conversionsUseAvx512()) {
        for (; s + kBlock <= pixels; s += kBlock)
            transposeTile(planes + s, pixels, pixelsOut + s * kBlock, kBlock);
    }
#endif
    for (; s < pixels; ++s)
        for (std::int64_t j = 0; j < kBlock; ++j)
            pixelsOut[s * kBlock + j] = planes[j * pixels + s];
}

template <typename T>
void slabFromBlocks(const T* pixelsIn, T* planes, std::int64_t pixels)
{
    std::int64_t s = 0;
#ifdef MANTISSA_CHANNEL_BLOCKS_AVX512
    if (conversionsUseAvx512()) {
        for (; s + kBlock <= pixels; s += kBlock)
            transposeTile(pixelsIn + s * kBlock, kBlock, planes + s, pixels);
    }
#endif
    for (; s < pixels; ++s)
        for (std::int64_t j = 0; j < kBlock; ++j)
            planes[j * pixels + s] = pixelsIn[s * kBlock + j];
}

template <typename T>
void reorder(const void* src, void* dst, std::int64_t n, std::int64_t channels, std::int64_t pixels, bool toBlocks)
{
    MANTISSA_ASSERT(channelBlocksApply(channels));
    const std::int64_t slabs = n * (channels / kBlock);
    const auto* in = static_cast<const T*>(src);
    auto* out = static_cast<T*>(dst);
    // A slab is the same 16 x pixels values in both layouts, at the same offset.
#pragma omp parallel for schedule(static) if (slabs * pixels * kBlock > 65536)
    for (std::int64_t slab = 0; slab < slabs; ++slab) {
        const std::int64_t offset = slab * kBlock * pixels;
        if (toBlocks)
            slabToBlocks(in + offset, out + offset, pixels);
        else
            slabFromBlocks(in + offset, out + offset, pixels);
    }
}

void dispatch(const void* src, void* dst, std::int64_t n, std::int64_t channels, std::int64_t pixels,
              std::size_t elementBytes, bool toBlocks)
{
    MANTISSA_ASSERT(elementBytes == 2 || elementBytes == 4);
    if (elementBytes == 2)
        reorder<std::uint16_t>(src, dst, n, channels, pixels, toBlocks);
    else
        reorder<std::uint32_t>(src, dst, n, channels, pixels, toBlocks);
}

} // namespace

void toChannelBlocks(const void* nchw, void* blocked, std::int64_t n, std::int64_t channels, std::int64_t pixels,
                     std::size_t elementBytes)
{
    dispatch(nchw, blocked, n, channels, pixels, elementBytes, true);
}

void fromChannelBlocks(const void* blocked, void* nchw, std::int64_t n, std::int64_t channels, std::int64_t pixels,
                       std::size_t elementBytes)
{
    dispatch(blocked, nchw, n, channels, pixels, elementBytes, false);
}

} // namespace mantissa::cpu
