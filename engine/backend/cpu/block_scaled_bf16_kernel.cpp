// The block-scaled GEMM's avx512_bf16 kernel (block_scaled_bf16_kernel.h). Compiled for the
// build's baseline with per-function target attributes, and called only after the CPU was
// asked, so the library still runs where AVX-512 is missing.
//
// Layout: op(B) is packed once per call into panels of 64 columns, each K-pair of a panel as
// 64 (B[k, j], B[k + 1, j]) pairs, the VDPBF16PS operand order. Each (A[i, k], A[i, k + 1])
// pair is one 32-bit word the kernel broadcasts: op(A) is read where it lies when its rows run
// along K (k even), else packed, pairs interleaved like B's. A tile of up to 6 rows x 64
// columns sums one K-chunk in 24 registers, then promotes them into the fp32 running sums of
// its rows, scaled by the chunk's decode scales; the running sums of 48 rows (12 KB) and one
// chunk of the B panel (16 KB) stay in L1 while the chunks go by, and the last chunk's sums go
// from the registers to the output with the bias and the rounding.
#include "engine/backend/cpu/block_scaled_bf16_kernel.h"

#include "engine/numerics/reference_conversions.h"
#include "engine/util/check.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 headers start some intrinsics from _mm*_undefined_*() and then warn that
// the value is uninitialised where they are inlined (GCC bug 105593): not a fault of ours.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define MANTISSA_HAS_BF16_KERNEL 1
#define MANTISSA_AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#endif

#ifdef _OPENMP
#include <omp.h>
#endif

namespace mantissa::cpu {

namespace {

constexpr std::int64_t kPanel = 64;     // columns per packed panel: four 16-float vectors
constexpr int kRows = 6;                // rows per tile: 6 x 4 accumulators, 4 B vectors, 1 broadcast
constexpr std::int64_t kGroupRows = 48; // rows whose running sums stay in L1 together

std::int64_t panelsOf(std::int64_t n) { return (n + kPanel - 1) / kPanel; }

// Where op(A)'s K-pairs lie: the pair (A[i, 2q], A[i, 2q + 1]) at data + i * rowStride +
// q * pairStride (in bf16 values).
struct PairRows {
    const std::uint16_t* data = nullptr;
    std::int64_t rowStride = 0, pairStride = 0;
};

#ifdef MANTISSA_HAS_BF16_KERNEL

// The permutex2var_epi16 indices that interleave the first 16 words of two vectors: word j of
// the first, then word j of the second (index 32 + j), for j < 16.
alignas(64) constexpr std::uint16_t kInterleaveLow[32] = {0, 32, 1, 33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
                                                          8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};

// to[2j] = even[j], to[2j + 1] = odd[j] (0 without odd), for j < count.
MANTISSA_AVX512BF16 void interleave(const std::uint16_t* even, const std::uint16_t* odd, std::int64_t count,
                                    std::uint16_t* to)
{
    const __m512i low = _mm512_load_si512(kInterleaveLow), high = _mm512_add_epi16(low, _mm512_set1_epi16(16));
    std::int64_t j = 0;
    for (; j + 32 <= count; j += 32) {
        const __m512i e = _mm512_loadu_si512(even + j);
        const __m512i o = odd ? _mm512_loadu_si512(odd + j) : _mm512_setzero_si512();
        _mm512_storeu_si512(to + 2 * j, _mm512_permutex2var_epi16(e, low, o));
        _mm512_storeu_si512(to + 2 * j + 32, _mm512_permutex2var_epi16(e, high, o));
    }
    for (; j < count; ++j) {
        to[2 * j] = even[j];
        to[2 * j + 1] = odd ? odd[j] : 0;
    }
}

// Transposes 16 vectors of 16 32-bit words in place: afterwards r[c] holds word c of every
// vector that came in.
MANTISSA_AVX512BF16 void transpose16x16(__m512i (&r)[16])
{
    __m512i u[16];
    // u[4g + c], 128-bit lane L: word 4L + c of rows 4g .. 4g + 3.
    for (int g = 0; g < 4; ++g) {
        const __m512i lo01 = _mm512_unpacklo_epi32(r[4 * g], r[4 * g + 1]);
        const __m512i hi01 = _mm512_unpackhi_epi32(r[4 * g], r[4 * g + 1]);
        const __m512i lo23 = _mm512_unpacklo_epi32(r[4 * g + 2], r[4 * g + 3]);
        const __m512i hi23 = _mm512_unpackhi_epi32(r[4 * g + 2], r[4 * g + 3]);
        u[4 * g] = _mm512_unpacklo_epi64(lo01, lo23);
        u[4 * g + 1] = _mm512_unpackhi_epi64(lo01, lo23);
        u[4 * g + 2] = _mm512_unpacklo_epi64(hi01, hi23);
        u[4 * g + 3] = _mm512_unpackhi_epi64(hi01, hi23);
    }
    // Word 4L + c of all 16 rows: lane L of u[c], u[4 + c], u[8 + c], u[12 + c].
    for (int c = 0; c < 4; ++c) {
        const __m512i even = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x88),
                      odd = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xdd);
        const __m512i even2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x88);
        const __m512i odd2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xdd);
        r[c] = _mm512_shuffle_i32x4(even, even2, 0x88);
        r[4 + c] = _mm512_shuffle_i32x4(odd, odd2, 0x88);
        r[8 + c] = _mm512_shuffle_i32x4(even, even2, 0xdd);
        r[12 + c] = _mm512_shuffle_i32x4(odd, odd2, 0xdd);
    }
}

// Transposes 16 rows of 16 32-bit words (row r at src + r * srcStride bf16 values) into 16 rows
// at dst + c * dstStride words: dst row c holds word c of every source row.
MANTISSA_AVX512BF16 void transposeWords(const std::uint16_t* src, std::int64_t srcStride, std::uint32_t* dst,
                                        std::int64_t dstStride)
{
    __m512i r[16];
    for (int i = 0; i < 16; ++i)
        r[i] = _mm512_loadu_si512(src + i * srcStride);
    transpose16x16(r);
    for (int c = 0; c < 16; ++c)
        _mm512_storeu_si512(dst + c * dstStride, r[c]);
}

// op(B) [k, n] into panels [panel][pair][64][2], zero beyond n and beyond k (an odd k's last
// pair), so that every tile multiplies full vectors.
MANTISSA_AVX512BF16 void packB(Bf16Operand b, std::int64_t k, std::int64_t n, std::uint16_t* packed)
{
    const std::int64_t pairs = (k + 1) / 2, panels = panelsOf(n);
#pragma omp parallel for schedule(static) if (n * k >= (std::int64_t{1} << 15))
    for (std::int64_t p = 0; p < panels; ++p) {
        std::uint16_t* panel = packed + p * pairs * kPanel * 2;
        const std::int64_t j0 = p * kPanel, width = std::min(kPanel, n - j0);
        if (b.kMajor) {
            // Rows 2q and 2q + 1 of the [k, n] buffer, interleaved.
            for (std::int64_t q = 0; q < pairs; ++q) {
                const std::uint16_t* even = b.data + 2 * q * n + j0;
                std::uint16_t* to = panel + q * kPanel * 2;
                interleave(even, 2 * q + 1 < k ? even + n : nullptr, width, to);
                std::fill(to + 2 * width, to + 2 * kPanel, std::uint16_t{0});
            }
            continue;
        }
        // Column j of op(B) is row j of the [n, k] buffer, its K-pairs 32-bit words: the
        // panel is that [width, pairs] word matrix transposed, 16 x 16 words at a time.
        auto* words = reinterpret_cast<std::uint32_t*>(panel);
        if (width < kPanel)
            std::fill(words, words + pairs * kPanel, 0u);
        const std::int64_t vectorPairs = k / 2 / 16 * 16, vectorColumns = width / 16 * 16;
        for (std::int64_t j = 0; j < vectorColumns; j += 16)
            for (std::int64_t q = 0; q < vectorPairs; q += 16)
                transposeWords(b.data + (j0 + j) * k + 2 * q, k, words + q * kPanel + j, kPanel);
        for (std::int64_t j = 0; j < width; ++j) {
            const std::uint16_t* column = b.data + (j0 + j) * k;
            for (std::int64_t q = j < vectorColumns ? vectorPairs : 0; q < pairs; ++q) {
                panel[(q * kPanel + j) * 2] = column[2 * q];
                panel[(q * kPanel + j) * 2 + 1] = 2 * q + 1 < k ? column[2 * q + 1] : 0;
            }
        }
    }
}

// op(A) [m, k] as the kernel reads its pairs: rows of pairs along K, where it lies when its
// rows run along K with whole pairs, else packed into [m][pairs] words: a [k, m] buffer's rows
// 2q and 2q + 1 interleaved into words and transposed 16 x 16 at a time, so that each of a
// tile's rows is read in order.
MANTISSA_AVX512BF16 PairRows pairRowsOfA(Bf16Operand a, std::int64_t m, std::int64_t k,
                                         std::vector<std::uint16_t>& packed)
{
    const std::int64_t pairs = (k + 1) / 2;
    if (!a.kMajor && k % 2 == 0)
        return {a.data, k, 2};
    if (packed.size() < static_cast<std::size_t>(m * pairs * 2))
        packed.resize(static_cast<std::size_t>(m * pairs * 2));
    std::uint16_t* to = packed.data();
    if (!a.kMajor) {
#pragma omp parallel for schedule(static) if (m * k >= (std::int64_t{1} << 15))
        for (std::int64_t i = 0; i < m; ++i) {
            std::copy_n(a.data + i * k, k, to + i * 2 * pairs);
            to[i * 2 * pairs + k] = 0;
        }
        return {to, 2 * pairs, 2};
    }
    auto* words = reinterpret_cast<std::uint32_t*>(to);
    const std::int64_t vectorRows = m / 16 * 16, vectorPairs = k / 2 / 16 * 16;
#pragma omp parallel for schedule(static) if (m * k >= (std::int64_t{1} << 15))
    for (std::int64_t i = 0; i < vectorRows; i += 16) {
        const __m512i interleaveIndex = _mm512_load_si512(kInterleaveLow);
        for (std::int64_t q = 0; q < vectorPairs; q += 16) {
            __m512i r[16];
            for (int t = 0; t < 16; ++t) {
                const std::uint16_t* even = a.data + 2 * (q + t) * m + i;
                r[t] = _mm512_permutex2var_epi16(
                    _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(even))), interleaveIndex,
                    _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(even + m))));
            }
            transpose16x16(r);
            for (int c = 0; c < 16; ++c)
                _mm512_storeu_si512(words + (i + c) * pairs + q, r[c]);
        }
    }
    // The rows and pairs the 16 x 16 blocks left.
    const auto element = [&](std::int64_t kk, std::int64_t i) {
        return kk < k ? a.data[kk * m + i] : std::uint16_t{0};
    };
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t q = i < vectorRows ? vectorPairs : 0; q < pairs; ++q) {
            to[(i * pairs + q) * 2] = element(2 * q, i);
            to[(i * pairs + q) * 2 + 1] = element(2 * q + 1, i);
        }
    return {to, 2 * pairs, 2};
}

// Where a tile's last chunk goes: the output at the tile's first row and the panel's first
// column (row stride `stride` values of `type`), the bias at that column or null, and how many
// of the panel's 64 columns the output has.
struct TileOutput {
    void* data = nullptr;
    std::int64_t stride = 0;
    DType type = DType::F32;
    const float* bias = nullptr;
    int width = 0;
};

// out = fl(sum + bias) rounded to the output's type, 16 columns at `to`; lanes beyond `mask`
// are neither read (bias) nor written. bf16 rounds to nearest even as floatToBFloat16 does:
// VCVTNEPS2BF16 reads an fp32 subnormal as zero, so such lanes take the reference conversion.
MANTISSA_AVX512BF16 inline void storeFinished(__m512 sum, const float* bias, __mmask16 mask, DType type, void* to)
{
    if (bias)
        sum = _mm512_add_ps(sum, _mm512_maskz_loadu_ps(mask, bias));
    if (type == DType::F32) {
        _mm512_mask_storeu_ps(to, mask, sum);
        return;
    }
    auto* words = static_cast<std::uint16_t*>(to);
    if (type == DType::F16) {
        _mm256_mask_storeu_epi16(words, mask, _mm512_cvtps_ph(sum, _MM_FROUND_TO_NEAREST_INT));
        return;
    }
    _mm256_mask_storeu_epi16(words, mask, reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(sum)));
    const __m512i bits = _mm512_castps_si512(sum);
    const __mmask16 subnormal = mask & _mm512_testn_epi32_mask(bits, _mm512_set1_epi32(0x7f800000)) &
                                _mm512_test_epi32_mask(bits, _mm512_set1_epi32(0x007fffff));
    if (subnormal) {
        alignas(64) float lanes[16];
        _mm512_store_ps(lanes, sum);
        for (unsigned l = subnormal; l != 0; l &= l - 1) {
            const int lane = __builtin_ctz(l);
            words[lane] = reference::floatToBFloat16Bits(lanes[lane]);
        }
    }
}

// One K-chunk of a tile of R rows x 64 columns: the chunk's `pairs` K-pairs summed in
// registers, then sums[r][j] = fma(fl(scaleA[r] * scaleB[j]), P[r][j], first ? 0 : sums[r][j]);
// on the last chunk (`finish` set) the result goes from the registers to the output instead,
// with the bias and the rounding, so the tile's last sums never cross memory.
// `a` is at the tile's first row and the chunk's first pair.
template <int R>
MANTISSA_AVX512BF16 void chunkTile(PairRows a, const std::uint16_t* panel, std::int64_t pairs, const float* scaleA,
                                   const float* scaleB, bool first, float* sums, const TileOutput* finish)
{
    __m512 acc[R][4];
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v)
            acc[r][v] = _mm512_setzero_ps();
    for (std::int64_t q = 0; q < pairs; ++q) {
        const std::uint16_t* bq = panel + q * kPanel * 2;
        const std::uint16_t* aq = a.data + q * a.pairStride;
        __m512bh bv[4];
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v)
            bv[v] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(bq + v * 32));
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r) {
            std::int32_t word;
            std::memcpy(&word, aq + r * a.rowStride, sizeof word);
            const __m512bh av = reinterpret_cast<__m512bh>(_mm512_set1_epi32(word));
#pragma GCC unroll 4
            for (int v = 0; v < 4; ++v)
                acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, bv[v]);
        }
    }
    __m512 sb[4];
    __mmask16 masks[4];
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
        sb[v] = _mm512_loadu_ps(scaleB + v * 16);
        const int lanes = finish ? std::clamp(finish->width - v * 16, 0, 16) : 16;
        masks[v] = static_cast<__mmask16>((1u << lanes) - 1u);
    }
    const std::size_t element = finish ? dtypeSize(finish->type) : 0;
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
        const __m512 sa = _mm512_set1_ps(scaleA[r]);
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) {
            float* at = sums + r * kPanel + v * 16;
            const __m512 running = first ? _mm512_setzero_ps() : _mm512_loadu_ps(at);
            const __m512 sum = _mm512_fmadd_ps(_mm512_mul_ps(sa, sb[v]), acc[r][v], running);
            if (!finish)
                _mm512_storeu_ps(at, sum);
            else if (masks[v] != 0)
                storeFinished(sum, finish->bias ? finish->bias + v * 16 : nullptr, masks[v], finish->type,
                              static_cast<unsigned char*>(finish->data) +
                                  static_cast<std::size_t>(r * finish->stride + v * 16) * element);
        }
    }
}

using ChunkTileFn = void (*)(PairRows, const std::uint16_t*, std::int64_t, const float*, const float*, bool, float*,
                             const TileOutput*);
constexpr ChunkTileFn kChunkTiles[kRows + 1] = {nullptr,      chunkTile<1>, chunkTile<2>, chunkTile<3>,
                                                chunkTile<4>, chunkTile<5>, chunkTile<6>};

#endif

} // namespace

namespace {

std::atomic<bool> g_allowed{true};

bool cpuRunsKernel()
{
#ifdef MANTISSA_HAS_BF16_KERNEL
    static const bool runs = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
    return runs;
#else
    return false;
#endif
}

} // namespace

bool allowBlockScaledBf16Kernel(bool allowed) { return g_allowed.exchange(allowed); }

bool blockScaledBf16KernelRuns() { return cpuRunsKernel() && g_allowed.load(std::memory_order_relaxed); }

void blockScaledBf16Gemm(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t chunk, Bf16Operand a,
                         Bf16Operand b, ChunkScales scalesA, ChunkScales scalesB, const float* bias, ChunkSumOutput out,
                         BlockScaledScratch& scratch)
{
    MANTISSA_ASSERT(cpuRunsKernel() && chunk > 0 && chunk % 2 == 0 && k > 0);
#ifdef MANTISSA_HAS_BF16_KERNEL
    if (m == 0 || n == 0)
        return;
    const std::int64_t chunks = (k + chunk - 1) / chunk;
    const std::int64_t panels = panelsOf(n), pairs = (k + 1) / 2, nPadded = panels * kPanel;
    if (scratch.packedB.size() < static_cast<std::size_t>(nPadded * pairs * 2))
        scratch.packedB.resize(static_cast<std::size_t>(nPadded * pairs * 2));
    packB(b, k, n, scratch.packedB.data());
    const PairRows rowsA = pairRowsOfA(a, m, k, scratch.packedA);
    if (scratch.scalesB.size() < static_cast<std::size_t>(chunks * nPadded))
        scratch.scalesB.resize(static_cast<std::size_t>(chunks * nPadded));
    chunkScaleRows(scalesB, chunks, n, nPadded, scratch.scalesB.data());
    const float* rowScalesB = scratch.scalesB.data();
    const std::uint16_t* packedB = scratch.packedB.data();

    // Work items: a panel and a range of row groups, enough of them to share out over the team.
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    const std::int64_t groups = (m + kGroupRows - 1) / kGroupRows;
    const std::int64_t splits = std::min(groups, std::max<std::int64_t>(1, (8 * threads + panels - 1) / panels));
    const std::int64_t groupsPerSplit = (groups + splits - 1) / splits;
#pragma omp parallel for schedule(static) if (m * n * k >= (std::int64_t{1} << 18))
    for (std::int64_t item = 0; item < panels * splits; ++item) {
        const std::int64_t p = item / splits, split = item % splits;
        const std::int64_t j0 = p * kPanel, width = std::min(kPanel, n - j0);
        const std::uint16_t* panel = packedB + p * pairs * kPanel * 2;
        alignas(64) float sums[kGroupRows * kPanel];
        const std::int64_t splitEnd = std::min(m, (split + 1) * groupsPerSplit * kGroupRows);
        for (std::int64_t g0 = split * groupsPerSplit * kGroupRows; g0 < splitEnd; g0 += kGroupRows) {
            const std::int64_t g1 = std::min(splitEnd, g0 + kGroupRows);
            for (std::int64_t c = 0; c < chunks; ++c) {
                const std::int64_t q0 = c * chunk / 2, q1 = std::min(pairs, (c + 1) * chunk / 2);
                const float* scaleB = rowScalesB + c * nPadded + j0;
                for (std::int64_t i = g0; i < g1; i += kRows) {
                    const int rows = static_cast<int>(std::min<std::int64_t>(kRows, g1 - i));
                    float scaleA[kRows];
                    for (int r = 0; r < rows; ++r)
                        scaleA[r] = chunkScaleAt(scalesA, c, i + r);
                    const PairRows tileA{rowsA.data + i * rowsA.rowStride + q0 * rowsA.pairStride, rowsA.rowStride,
                                         rowsA.pairStride};
                    const TileOutput finish{static_cast<unsigned char*>(out.data) +
                                                static_cast<std::size_t>(i * n + j0) * dtypeSize(out.type),
                                            n, out.type, bias ? bias + j0 : nullptr, static_cast<int>(width)};
                    kChunkTiles[rows](tileA, panel + q0 * kPanel * 2, q1 - q0, scaleA, scaleB, c == 0,
                                      sums + (i - g0) * kPanel, c == chunks - 1 ? &finish : nullptr);
                }
            }
        }
    }
#else
    (void)m, (void)n, (void)k, (void)a, (void)b, (void)scalesA, (void)scalesB, (void)bias, (void)out, (void)scratch;
#endif
}

} // namespace mantissa::cpu
