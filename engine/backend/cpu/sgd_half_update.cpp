// Compiled for the build's baseline with a per-function target attribute, and called only
// where conversionsUseAvx512() says the CPU has AVX-512.
#include "engine/backend/cpu/sgd_half_update.h"

#include "engine/numerics/conversions.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 headers start some intrinsics from _mm*_undefined_*() and then warn that
// the value is uninitialised where they are inlined (GCC bug 105593): not a fault of ours.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace mantissa::cpu {

namespace {

__attribute__((target("avx512f"))) std::size_t updateLanes(const SgdHalfLanes& s, std::size_t n)
{
    const __m512 invScale = _mm512_set1_ps(s.invScale);
    const __m512 decay = _mm512_set1_ps(s.decay);
    const __m512 momentum = _mm512_set1_ps(s.momentum);
    const __m512 minusLr = _mm512_set1_ps(-s.lr);
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i half = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s.scaledGrad + i));
        const __m512 g = _mm512_mul_ps(_mm512_cvtph_ps(half), invScale);
        __m512 w = _mm512_loadu_ps(s.master + i);
        __m512 d = _mm512_fmadd_ps(decay, w, g);
        if (s.momentumBuffer) {
            const __m512 b = _mm512_fmadd_ps(momentum, _mm512_loadu_ps(s.momentumBuffer + i), d);
            _mm512_storeu_ps(s.momentumBuffer + i, b);
            d = s.nesterov ? _mm512_fmadd_ps(momentum, b, d) : b;
        }
        w = _mm512_fmadd_ps(minusLr, d, w);
        _mm512_storeu_ps(s.master + i, w);
        if (s.working)
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(s.working + i),
                                _mm512_cvtps_ph(w, _MM_FROUND_TO_NEAREST_INT));
    }
    return i;
}

} // namespace

std::size_t sgdHalfPrefix(const SgdHalfLanes& lanes, std::size_t n)
{
    return conversionsUseAvx512() ? updateLanes(lanes, n) : 0;
}

} // namespace mantissa::cpu

#else

namespace mantissa::cpu {

std::size_t sgdHalfPrefix(const SgdHalfLanes&, std::size_t) { return 0; }

} // namespace mantissa::cpu

#endif
