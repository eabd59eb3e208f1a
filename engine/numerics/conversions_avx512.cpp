// Compiled for the build's baseline with per-function target attributes, and called only after
// the CPU was asked (__builtin_cpu_supports), so the library still runs where AVX-512 is missing.
#include "engine/numerics/conversions_avx512.h"

#include "engine/numerics/reference_conversions.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 headers start some intrinsics from _mm*_undefined_*() and then warn that
// the value is uninitialised where they are inlined (GCC bug 105593): not a fault of ours.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace mantissa::avx512 {

bool hasAvx512()
{
    static const bool available = __builtin_cpu_supports("avx512f");
    return available;
}

bool hasBf16Conversion()
{
    static const bool available = hasAvx512() && __builtin_cpu_supports("avx512bf16");
    return available;
}

__attribute__((target("avx512f"))) std::size_t floatToHalfPrefix(const float* src, std::uint16_t* dst, std::size_t n)
{
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                            _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    return i;
}

__attribute__((target("avx512f"))) std::size_t halfToFloatPrefix(const std::uint16_t* src, float* dst, std::size_t n)
{
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
    return i;
}

__attribute__((target("avx512f,avx512bf16"))) std::size_t floatToBFloat16Prefix(const float* src, std::uint16_t* dst,
                                                                                std::size_t n)
{
    const __m512i exponent = _mm512_set1_epi32(0x7f800000);
    const __m512i mantissa = _mm512_set1_epi32(0x007fffff);
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 x = _mm512_loadu_ps(src + i);
        const __m512i bits = _mm512_castps_si512(x);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(x)));
        // Subnormal inputs (exponent 0, mantissa not): the instruction read them as zero.
        const __mmask16 subnormal = _mm512_testn_epi32_mask(bits, exponent) & _mm512_test_epi32_mask(bits, mantissa);
        for (unsigned lanes = subnormal; lanes != 0; lanes &= lanes - 1) {
            const std::size_t at = i + static_cast<std::size_t>(__builtin_ctz(lanes));
            dst[at] = reference::floatToBFloat16Bits(src[at]);
        }
    }
    return i;
}

__attribute__((target("avx512f"))) std::size_t bfloat16ToFloatPrefix(const std::uint16_t* src, float* dst,
                                                                     std::size_t n)
{
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
        _mm512_storeu_ps(dst + i, _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16)));
    }
    return i;
}

} // namespace mantissa::avx512

#else

namespace mantissa::avx512 {
bool hasAvx512() { return false; }
bool hasBf16Conversion() { return false; }
std::size_t floatToHalfPrefix(const float*, std::uint16_t*, std::size_t) { return 0; }
std::size_t halfToFloatPrefix(const std::uint16_t*, float*, std::size_t) { return 0; }
std::size_t floatToBFloat16Prefix(const float*, std::uint16_t*, std::size_t) { return 0; }
std::size_t bfloat16ToFloatPrefix(const std::uint16_t*, float*, std::size_t) { return 0; }
} // namespace mantissa::avx512

#endif
