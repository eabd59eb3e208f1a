// AVX-512 inner loops of the fast operand quantiser (fast_quantizer_simd.h). Compiled for the
// build's baseline with per-function target attributes, and called only after the CPU was
// asked (__builtin_cpu_supports), so the library still runs where AVX-512 is missing.
#include "engine/numerics/fast_quantizer_simd.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 headers start some intrinsics from _mm*_undefined_*() and then warn that
// the value is uninitialised where they are inlined (GCC bug 105593): not a fault of ours.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <bit>

#define MANTISSA_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
// Stochastic rounding's 64-bit multiplies and conversions need AVX-512 DQ as well.
#define MANTISSA_AVX512DQ __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))

namespace mantissa::fastq {

namespace {

MANTISSA_AVX512 inline __mmask16 tailMask(std::size_t n)
{
    return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1u);
}

template <bool Bf16>
MANTISSA_AVX512 inline __m512 load16(const void* in, std::size_t at, __mmask16 mask)
{
    if constexpr (Bf16) {
        const auto* from = static_cast<const std::uint16_t*>(in) + at;
        const __m256i h = mask == 0xffff ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from))
                                         : _mm256_maskz_loadu_epi16(mask, from);
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); // bf16 widens exactly
    } else {
        return mask == 0xffff ? _mm512_loadu_ps(static_cast<const float*>(in) + at)
                              : _mm512_maskz_loadu_ps(mask, static_cast<const float*>(in) + at);
    }
}

// Stores v and ORs the bits a bf16 store lost into `lost`. A full vector takes a plain store:
// AMD's Zen cores run masked stores at a fraction of a plain store's rate.
template <bool Bf16>
MANTISSA_AVX512 inline void store16(void* out, std::size_t at, __mmask16 mask, __m512 v, __m512i& lost)
{
    if constexpr (Bf16) {
        const __m512i bits = _mm512_castps_si512(v);
        lost = _mm512_mask_or_epi32(lost, mask, lost, _mm512_and_si512(bits, _mm512_set1_epi32(0xffff)));
        const __m256i narrow = _mm512_cvtepi32_epi16(_mm512_srli_epi32(bits, 16));
        auto* to = static_cast<std::uint16_t*>(out) + at;
        if (mask == 0xffff)
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(to), narrow);
        else
            _mm256_mask_storeu_epi16(to, mask, narrow);
    } else if (mask == 0xffff) {
        _mm512_storeu_ps(static_cast<float*>(out) + at, v);
    } else {
        _mm512_mask_storeu_ps(static_cast<float*>(out) + at, mask, v);
    }
}

MANTISSA_AVX512 inline __m512i magnitude(__m512 x)
{
    return _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff));
}

// fastq::roundOne on 16 lanes, with the same results by another route: a + c - c rounds the
// magnitude a to the element's grid in one fp32 addition (to nearest, ties to even), where c is
// 2^(e + 23 - M) for a's exponent e, or emin's below the element's normal range (c is then
// roundOne's subnormal magic). Its sum lies in [2^(e + 23 - M), 2^(e + 24 - M)), whose ulp is
// the element's quantum 2^(e - M) at e, so the addition itself rounds there; roundOne's integer
// route (add half an ulp and the last kept bit, cut) and its separate subnormal branch need five
// operations more. Exponents too large for c to be formed (a >= 2^(127 - 23 + M), far above
// every element's largest value) take a smaller c, leave a unrounded, and saturate like any
// value above the largest. Every code and midpoint of every element is checked against the
// reference (fast_operand_quantizer_test).
struct Rounding16 {
    __m512i minExponent, largestExponent, cExponent;
    __m512 maxFinite;
};

MANTISSA_AVX512 inline Rounding16 rounding16(const ElementRounding& r)
{
    const std::uint32_t minNormalExponent = std::bit_cast<std::uint32_t>(r.minNormal) & 0x7f800000u;
    return {_mm512_set1_epi32(static_cast<int>(minNormalExponent)),
            _mm512_set1_epi32(static_cast<int>((254u - r.shift) << 23)),
            _mm512_set1_epi32(static_cast<int>(r.shift << 23)), _mm512_set1_ps(r.maxFinite)};
}

MANTISSA_AVX512 inline __m512 roundOne16(__m512 x, __m512 multiplier, __m512 scale, const Rounding16& r)
{
    const __m512 y = _mm512_mul_ps(x, multiplier);
    const __m512i aBits = magnitude(y);
    __m512i exponent = _mm512_and_si512(aBits, _mm512_set1_epi32(0x7f800000));
    exponent = _mm512_min_epu32(_mm512_max_epu32(exponent, r.minExponent), r.largestExponent);
    const __m512 c = _mm512_castsi512_ps(_mm512_add_epi32(exponent, r.cExponent));
    const __m512 a = _mm512_castsi512_ps(aBits);
    __m512 rounded = _mm512_sub_ps(_mm512_add_ps(a, c), c);
    rounded = _mm512_min_ps(rounded, r.maxFinite); // rounded >= 0 and not NaN: std::min's result
    // rounded | (y & sign): bit by bit, the sign bit from y and the others from rounded (0xd8:
    // the second operand where the third has a 1, the first elsewhere).
    const __m512i signedRounded = _mm512_ternarylogic_epi32(_mm512_castps_si512(rounded), _mm512_castps_si512(y),
                                                            _mm512_set1_epi32(static_cast<int>(0x80000000u)), 0xd8);
    return _mm512_mul_ps(_mm512_castsi512_ps(signedRounded), scale);
}

template <bool InBf16>
MANTISSA_AVX512 std::uint32_t amaxBits(const void* in, std::size_t begin, std::size_t n)
{
    __m512i m = _mm512_setzero_si512();
    for (std::size_t i = 0; i < n; i += 16) {
        const __mmask16 mask = tailMask(n - i);
        m = _mm512_mask_max_epu32(m, mask, m, magnitude(load16<InBf16>(in, begin + i, mask)));
    }
    return _mm512_reduce_max_epu32(m);
}

template <bool InBf16>
MANTISSA_AVX512 void amaxLanes(const void* in, std::size_t begin, std::size_t n, std::uint32_t* amax)
{
    for (std::size_t i = 0; i < n; i += 16) {
        const __mmask16 mask = tailMask(n - i);
        const __m512i m = _mm512_maskz_loadu_epi32(mask, amax + i);
        _mm512_mask_storeu_epi32(amax + i, mask, _mm512_max_epu32(m, magnitude(load16<InBf16>(in, begin + i, mask))));
    }
}

MANTISSA_AVX512 inline std::uint32_t orLanes(__m512i lost)
{
    return static_cast<std::uint32_t>(_mm512_reduce_or_epi32(lost));
}

template <bool InBf16, bool OutBf16>
MANTISSA_AVX512 std::uint32_t round(const void* in, void* out, std::size_t begin, std::size_t n, Plan plan,
                                    const ElementRounding& er)
{
    const Rounding16 r = rounding16(er);
    const __m512 multiplier = _mm512_set1_ps(plan.multiplier), scale = _mm512_set1_ps(plan.scale);
    __m512i lost = _mm512_setzero_si512();
    for (std::size_t i = 0; i < n; i += 16) {
        const __mmask16 mask = tailMask(n - i);
        store16<OutBf16>(out, begin + i, mask, roundOne16(load16<InBf16>(in, begin + i, mask), multiplier, scale, r),
                         lost);
    }
    return orLanes(lost);
}

template <bool InBf16, bool OutBf16>
MANTISSA_AVX512 std::uint32_t roundLanes(const void* in, void* out, std::size_t begin, std::size_t n,
                                         const float* multiplier, const float* scale, const ElementRounding& er)
{
    const Rounding16 r = rounding16(er);
    __m512i lost = _mm512_setzero_si512();
    for (std::size_t i = 0; i < n; i += 16) {
        const __mmask16 mask = tailMask(n - i);
        const __m512 m = _mm512_maskz_loadu_ps(mask, multiplier + i), s = _mm512_maskz_loadu_ps(mask, scale + i);
        store16<OutBf16>(out, begin + i, mask, roundOne16(load16<InBf16>(in, begin + i, mask), m, s, r), lost);
    }
    return orLanes(lost);
}

template <bool InBf16>
MANTISSA_AVX512 std::uint32_t amaxRows(const void* in, std::size_t begin, std::size_t n, std::size_t rows,
                                       std::size_t stride)
{
    __m512i m = _mm512_setzero_si512();
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t i = 0, at = begin + r * stride; i < n; i += 16) {
            const __mmask16 mask = tailMask(n - i);
            m = _mm512_mask_max_epu32(m, mask, m, magnitude(load16<InBf16>(in, at + i, mask)));
        }
    return _mm512_reduce_max_epu32(m);
}

template <bool InBf16, bool OutBf16>
MANTISSA_AVX512 std::uint32_t roundRows(const void* in, void* out, std::size_t begin, std::size_t n, std::size_t rows,
                                        std::size_t stride, Plan plan, const ElementRounding& er)
{
    const Rounding16 r = rounding16(er);
    const __m512 multiplier = _mm512_set1_ps(plan.multiplier), scale = _mm512_set1_ps(plan.scale);
    __m512i lost = _mm512_setzero_si512();
    for (std::size_t row = 0; row < rows; ++row)
        for (std::size_t i = 0, at = begin + row * stride; i < n; i += 16) {
            const __mmask16 mask = tailMask(n - i);
            store16<OutBf16>(out, at + i, mask, roundOne16(load16<InBf16>(in, at + i, mask), multiplier, scale, r),
                             lost);
        }
    return orLanes(lost);
}

template <bool InBf16>
MANTISSA_AVX512 void amaxBlocks(const void* in, std::size_t begin, std::size_t n, std::size_t block,
                                std::uint32_t* amax)
{
    for (std::size_t b = 0, at = 0; at < n; ++b, at += block) {
        const std::size_t length = std::min(block, n - at);
        __m512i m = _mm512_setzero_si512();
        for (std::size_t i = 0; i < length; i += 16) {
            const __mmask16 mask = tailMask(length - i);
            m = _mm512_mask_max_epu32(m, mask, m, magnitude(load16<InBf16>(in, begin + at + i, mask)));
        }
        amax[b] = _mm512_reduce_max_epu32(m);
    }
}

template <bool InBf16, bool OutBf16>
MANTISSA_AVX512 std::uint32_t roundBlocks(const void* in, void* out, std::size_t begin, std::size_t n,
                                          std::size_t block, const float* multiplier, const float* scale,
                                          const ElementRounding& er)
{
    const Rounding16 r = rounding16(er);
    __m512i lost = _mm512_setzero_si512();
    for (std::size_t b = 0, at = 0; at < n; ++b, at += block) {
        const std::size_t length = std::min(block, n - at);
        const __m512 m = _mm512_set1_ps(multiplier[b]), s = _mm512_set1_ps(scale[b]);
        for (std::size_t i = 0; i < length; i += 16) {
            const __mmask16 mask = tailMask(length - i);
            store16<OutBf16>(out, begin + at + i, mask, roundOne16(load16<InBf16>(in, begin + at + i, mask), m, s, r),
                             lost);
        }
    }
    return orLanes(lost);
}

// fastq::roundOneStochastic on 16 lanes, the same operations: the value's binade (its exponent,
// at least emin), t = |y| / ulp by a power of two, its whole part and fraction, and a round-up
// where the 64 random bits are below the fraction times 2^64. The random bits of 16 values are
// SplitMix64 on two vectors of 8 64-bit states, stepped by adding (stochastic_bits.h:
// stream + (counter + 1) * golden, with the counters first + i * stride).
struct Stochastic16 {
    __m512i minBinade; // emin + 127: the binade's biased exponent is at least this
    __m512i mantissaBits;
    __m512 maxFinite;
};

struct Draws16 {
    __m512i low, high; // the states of lanes 0-7 and 8-15
    __m512i step;      // 16 strides' worth of state
};

MANTISSA_AVX512DQ inline Draws16 draws16(const Draws& d)
{
    constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ull;
    const std::uint64_t first = d.stream + (d.first + 1) * kGolden, delta = d.stride * kGolden;
    const __m512i lanes = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i offsets = _mm512_mullo_epi64(lanes, _mm512_set1_epi64(static_cast<long long>(delta)));
    const __m512i base = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(first)), offsets);
    return {base, _mm512_add_epi64(base, _mm512_set1_epi64(static_cast<long long>(8 * delta))),
            _mm512_set1_epi64(static_cast<long long>(16 * delta))};
}

MANTISSA_AVX512DQ inline __m512i splitMix64x8(__m512i z)
{
    z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 30));
    z = _mm512_mullo_epi64(z, _mm512_set1_epi64(static_cast<long long>(0xbf58476d1ce4e5b9ull)));
    z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 27));
    z = _mm512_mullo_epi64(z, _mm512_set1_epi64(static_cast<long long>(0x94d049bb133111ebull)));
    return _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
}

MANTISSA_AVX512DQ inline __m512 roundStochastic16(__m512 x, __m512 multiplier, __m512 scale, const Stochastic16& r,
                                                  Draws16& d)
{
    const __m512 y = _mm512_mul_ps(x, multiplier);
    const __m512i aBits = magnitude(y);
    const __m512i binade = _mm512_max_epi32(_mm512_srli_epi32(aBits, 23), r.minBinade); // biased
    // 2^(M - binade) and 2^(binade - M) from their exponent fields (254 = 2 x 127).
    const __m512 toUlps = _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_sub_epi32(_mm512_add_epi32(r.mantissaBits, _mm512_set1_epi32(254)), binade), 23));
    const __m512 ulp = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_sub_epi32(binade, r.mantissaBits), 23));
    const __m512 t = _mm512_mul_ps(_mm512_castsi512_ps(aBits), toUlps);
    const __m512 whole = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __m512 threshold = _mm512_mul_ps(_mm512_sub_ps(t, whole), _mm512_set1_ps(0x1p64f));
    const __m512i lowThreshold = _mm512_cvttps_epu64(_mm512_castps512_ps256(threshold));
    const __m512i highThreshold = _mm512_cvttps_epu64(_mm512_extractf32x8_ps(threshold, 1));
    const __mmask8 lowUp = _mm512_cmplt_epu64_mask(splitMix64x8(d.low), lowThreshold);
    const __mmask8 highUp = _mm512_cmplt_epu64_mask(splitMix64x8(d.high), highThreshold);
    d.low = _mm512_add_epi64(d.low, d.step);
    d.high = _mm512_add_epi64(d.high, d.step);
    const auto up = static_cast<__mmask16>(lowUp | (static_cast<unsigned>(highUp) << 8));
    const __m512 n = _mm512_mask_add_ps(whole, up, whole, _mm512_set1_ps(1.0f));
    const __m512 rounded = _mm512_min_ps(_mm512_mul_ps(n, ulp), r.maxFinite);
    const __m512i signedRounded = _mm512_ternarylogic_epi32(_mm512_castps_si512(rounded), _mm512_castps_si512(y),
                                                            _mm512_set1_epi32(static_cast<int>(0x80000000u)), 0xd8);
    return _mm512_mul_ps(_mm512_castsi512_ps(signedRounded), scale);
}

MANTISSA_AVX512DQ inline Stochastic16 stochastic16(const ElementRounding& r)
{
    return {_mm512_set1_epi32(r.minExponent + 127), _mm512_set1_epi32(r.mantissaBits), _mm512_set1_ps(r.maxFinite)};
}

template <bool InBf16, bool OutBf16>
MANTISSA_AVX512DQ std::uint32_t stochasticRuns(const void* in, void* out, std::size_t begin, std::size_t n,
                                               std::size_t run, const float* multiplier, const float* scale,
                                               const ElementRounding& er, Draws draws)
{
    const Stochastic16 r = stochastic16(er);
    __m512i lost = _mm512_setzero_si512();
    for (std::size_t j = 0, at = 0; at < n; ++j, at += run) {
        const std::size_t length = std::min(run, n - at);
        Draws16 d = draws16({draws.stream, draws.first + at * draws.stride, draws.stride});
        const __m512 m = _mm512_set1_ps(multiplier[j]), s = _mm512_set1_ps(scale[j]);
        for (std::size_t i = 0; i < length; i += 16) {
            const __mmask16 mask = tailMask(length - i);
            store16<OutBf16>(out, begin + at + i, mask,
                             roundStochastic16(load16<InBf16>(in, begin + at + i, mask), m, s, r, d), lost);
        }
    }
    return orLanes(lost);
}

template <bool InBf16, bool OutBf16>
MANTISSA_AVX512DQ std::uint32_t stochasticLanes(const void* in, void* out, std::size_t begin, std::size_t n,
                                                const float* multiplier, const float* scale, const ElementRounding& er,
                                                Draws draws)
{
    const Stochastic16 r = stochastic16(er);
    Draws16 d = draws16(draws);
    __m512i lost = _mm512_setzero_si512();
    for (std::size_t i = 0; i < n; i += 16) {
        const __mmask16 mask = tailMask(n - i);
        const __m512 m = _mm512_maskz_loadu_ps(mask, multiplier + i), s = _mm512_maskz_loadu_ps(mask, scale + i);
        store16<OutBf16>(out, begin + i, mask, roundStochastic16(load16<InBf16>(in, begin + i, mask), m, s, r, d),
                         lost);
    }
    return orLanes(lost);
}

template <bool InBf16, bool OutBf16>
constexpr StochasticOps kStochasticOps{stochasticRuns<InBf16, OutBf16>, stochasticLanes<InBf16, OutBf16>};

template <bool InBf16, bool OutBf16>
constexpr SimdOps kOps{
    amaxBits<InBf16>, amaxLanes<InBf16>,          round<InBf16, OutBf16>, roundLanes<InBf16, OutBf16>,
    amaxRows<InBf16>, roundRows<InBf16, OutBf16>, amaxBlocks<InBf16>,     roundBlocks<InBf16, OutBf16>};

} // namespace

const SimdOps* avx512Ops(bool inBf16, bool outBf16)
{
    static const bool available =
        __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    if (!available)
        return nullptr;
    if (inBf16)
        return outBf16 ? &kOps<true, true> : &kOps<true, false>;
    return outBf16 ? &kOps<false, true> : &kOps<false, false>;
}

const StochasticOps* avx512StochasticOps(bool inBf16, bool outBf16)
{
    static const bool available = avx512Ops(false, false) != nullptr && __builtin_cpu_supports("avx512dq");
    if (!available)
        return nullptr;
    if (inBf16)
        return outBf16 ? &kStochasticOps<true, true> : &kStochasticOps<true, false>;
    return outBf16 ? &kStochasticOps<false, true> : &kStochasticOps<false, false>;
}

} // namespace mantissa::fastq

#else

namespace mantissa::fastq {
const SimdOps* avx512Ops(bool, bool) { return nullptr; }
const StochasticOps* avx512StochasticOps(bool, bool) { return nullptr; }
} // namespace mantissa::fastq

#endif
