#include "engine/numerics/conversions.h"

#include "engine/numerics/conversions_avx512.h"
#include "engine/numerics/reference_conversions.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <omp.h>
#if defined(__F16C__) && defined(__AVX2__)
#include <immintrin.h>
#define MANTISSA_VECTOR_CONVERSIONS 1
#endif

namespace mantissa {

#ifdef MANTISSA_VECTOR_CONVERSIONS
namespace {

// fp32 bits -> bf16 bits in the low 16 bits of each 32-bit lane (round to nearest even, NaN quietened).
inline __m256i bfloat16Lanes(__m256i x)
{
    const __m256i absx = _mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff));
    const __m256i isNan = _mm256_cmpgt_epi32(absx, _mm256_set1_epi32(0x7f800000));
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
    const __m256i rounded =
        _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
    const __m256i quietNan = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
    return _mm256_blendv_epi8(rounded, quietNan, isNan);
}

inline __m128i packLowHalves(__m256i lanes)
{
    const __m256i packed = _mm256_packus_epi32(lanes, lanes);
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0b1000));
}

} // namespace
#endif

void floatToHalf(const float* src, std::uint16_t* dst, std::size_t n)
{
    std::size_t i = conversionsUseAvx512() ? avx512::floatToHalfPrefix(src, dst, n) : 0;
#ifdef MANTISSA_VECTOR_CONVERSIONS
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
    }
#endif
    for (; i < n; ++i)
        dst[i] = reference::floatToHalfBits(src[i]);
}

void halfToFloat(const std::uint16_t* src, float* dst, std::size_t n)
{
    std::size_t i = conversionsUseAvx512() ? avx512::halfToFloatPrefix(src, dst, n) : 0;
#ifdef MANTISSA_VECTOR_CONVERSIONS
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    }
#endif
    for (; i < n; ++i)
        dst[i] = reference::halfBitsToFloat(src[i]);
}

namespace {
std::atomic<bool> g_avx512Allowed{true};
} // namespace

bool allowAvx512Conversions(bool allowed) { return g_avx512Allowed.exchange(allowed); }

bool conversionsUseAvx512() { return g_avx512Allowed.load(std::memory_order_relaxed) && avx512::hasAvx512(); }

namespace {
bool bf16NarrowingUsesAvx512() { return conversionsUseAvx512() && avx512::hasBf16Conversion(); }
} // namespace

void floatToBFloat16(const float* src, std::uint16_t* dst, std::size_t n)
{
    std::size_t i = bf16NarrowingUsesAvx512() ? avx512::floatToBFloat16Prefix(src, dst, n) : 0;
#ifdef MANTISSA_VECTOR_CONVERSIONS
    for (; i + 8 <= n; i += 8) {
        const __m256i x = _mm256_castps_si256(_mm256_loadu_ps(src + i));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), packLowHalves(bfloat16Lanes(x)));
    }
#endif
    for (; i < n; ++i)
        dst[i] = reference::floatToBFloat16Bits(src[i]);
}

void bfloat16ToFloat(const std::uint16_t* src, float* dst, std::size_t n)
{
    std::size_t i = conversionsUseAvx512() ? avx512::bfloat16ToFloatPrefix(src, dst, n) : 0;
#ifdef MANTISSA_VECTOR_CONVERSIONS
    for (; i + 8 <= n; i += 8) {
        const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
        _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16)));
    }
#endif
    for (; i < n; ++i)
        dst[i] = reference::bfloat16BitsToFloat(src[i]);
}

namespace {

// Conversions of large tensors are split across threads: they sit on the critical path of
// every 16-bit op on the CPU (the emulated path widens every GEMM operand). Each thread takes
// one equal share, a multiple of 16 elements so every share but the last stays on the vector
// path: fixed-size chunks dealt out statically left one thread a chunk more than the other
// (13 chunks of an 800k-element weight on two threads), and shares under two chunks ran on
// one thread while the other waited.
constexpr std::size_t kParallelMinimum = 1 << 15; // below this, waking the team costs more

template <typename Convert>
void forChunks(std::size_t n, Convert convert)
{
    const int threads = omp_get_max_threads();
    if (n < kParallelMinimum || threads < 2) {
        convert(std::size_t{0}, n);
        return;
    }
    const std::size_t share =
        ((n + static_cast<std::size_t>(threads) - 1) / static_cast<std::size_t>(threads) + 15) / 16 * 16;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int t = 0; t < threads; ++t) {
        const std::size_t begin = static_cast<std::size_t>(t) * share;
        if (begin < n)
            convert(begin, std::min(n, begin + share) - begin);
    }
}

} // namespace

void narrowFromFloat(const float* src, void* dst, std::size_t n, DType dstType)
{
    if (dstType != DType::F32) {
        auto* out = static_cast<std::uint16_t*>(dst);
        forChunks(n, [&](std::size_t begin, std::size_t count) {
            if (dstType == DType::F16)
                floatToHalf(src + begin, out + begin, count);
            else
                floatToBFloat16(src + begin, out + begin, count);
        });
        return;
    }
    switch (dstType) {
    case DType::F32: std::memcpy(dst, src, n * sizeof(float)); return;
    case DType::F16: floatToHalf(src, static_cast<std::uint16_t*>(dst), n); return;
    case DType::BF16: floatToBFloat16(src, static_cast<std::uint16_t*>(dst), n); return;
    }
}

void widenToFloat(const void* src, DType srcType, float* dst, std::size_t n)
{
    if (srcType != DType::F32) {
        const auto* in = static_cast<const std::uint16_t*>(src);
        forChunks(n, [&](std::size_t begin, std::size_t count) {
            if (srcType == DType::F16)
                halfToFloat(in + begin, dst + begin, count);
            else
                bfloat16ToFloat(in + begin, dst + begin, count);
        });
        return;
    }
    switch (srcType) {
    case DType::F32: std::memcpy(dst, src, n * sizeof(float)); return;
    case DType::F16: halfToFloat(static_cast<const std::uint16_t*>(src), dst, n); return;
    case DType::BF16: bfloat16ToFloat(static_cast<const std::uint16_t*>(src), dst, n); return;
    }
}

namespace {

void roundThroughOnOneThread(float* data, std::size_t n, DType type)
{
    std::size_t i = 0;
#ifdef MANTISSA_VECTOR_CONVERSIONS
    if (type == DType::F16) {
        for (; i + 8 <= n; i += 8) {
            const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(data + i), _MM_FROUND_TO_NEAREST_INT);
            _mm256_storeu_ps(data + i, _mm256_cvtph_ps(h));
        }
    } else {
        for (; i + 8 <= n; i += 8) {
            const __m256i lanes = bfloat16Lanes(_mm256_castps_si256(_mm256_loadu_ps(data + i)));
            _mm256_storeu_ps(data + i, _mm256_castsi256_ps(_mm256_slli_epi32(lanes, 16)));
        }
    }
#endif
    for (; i < n; ++i)
        data[i] = roundToDType(data[i], type);
}

} // namespace

void roundThrough(float* data, std::size_t n, DType type)
{
    if (type != DType::F32)
        forChunks(n, [&](std::size_t begin, std::size_t count) { roundThroughOnOneThread(data + begin, count, type); });
}

float roundToDType(float value, DType type)
{
    switch (type) {
    case DType::F32: return value;
    case DType::F16: return reference::halfBitsToFloat(reference::floatToHalfBits(value));
    case DType::BF16: return reference::bfloat16BitsToFloat(reference::floatToBFloat16Bits(value));
    }
    return value;
}

bool conversionsAreVectorised()
{
#ifdef MANTISSA_VECTOR_CONVERSIONS
    return true;
#else
    return false;
#endif
}

} // namespace mantissa
