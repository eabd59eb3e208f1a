// Portable inner loops of the fast operand quantiser (fast_quantizer_simd.h): plain loops the
// compiler vectorises for the build's baseline, used where the CPU lacks AVX-512 or the
// caller turned it off; and the run-time choice between them and fast_quantizer_avx512.cpp.
#include "engine/numerics/fast_quantizer_simd.h"

#include "engine/numerics/fast_operand_quantizer.h"
#include "engine/numerics/stochastic_bits.h"

#include <algorithm>
#include <atomic>
#include <bit>

namespace mantissa::fastq {

namespace {

inline std::uint32_t magnitudeBits(float x) { return std::bit_cast<std::uint32_t>(x) & 0x7fffffffu; }

template <bool Bf16>
inline float load(const void* p, std::size_t i)
{
    if constexpr (Bf16) // bf16 widens exactly
        return std::bit_cast<float>(static_cast<std::uint32_t>(static_cast<const std::uint16_t*>(p)[i]) << 16);
    else
        return static_cast<const float*>(p)[i];
}

// Stores v and returns the bits the store lost (none for fp32; for bf16, the low half).
template <bool Bf16>
inline std::uint32_t store(void* p, std::size_t i, float v)
{
    if constexpr (Bf16) {
        const auto bits = std::bit_cast<std::uint32_t>(v);
        static_cast<std::uint16_t*>(p)[i] = static_cast<std::uint16_t>(bits >> 16);
        return bits & 0xffffu;
    } else {
        static_cast<float*>(p)[i] = v;
        return 0;
    }
}

template <bool InBf16>
std::uint32_t amaxBits(const void* in, std::size_t begin, std::size_t n)
{
    std::uint32_t m = 0;
#pragma omp simd reduction(max : m)
    for (std::size_t i = 0; i < n; ++i)
        m = std::max(m, magnitudeBits(load<InBf16>(in, begin + i)));
    return m;
}

template <bool InBf16>
void amaxLanes(const void* in, std::size_t begin, std::size_t n, std::uint32_t* amax)
{
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i)
        amax[i] = std::max(amax[i], magnitudeBits(load<InBf16>(in, begin + i)));
}

template <bool InBf16, bool OutBf16>
std::uint32_t round(const void* in, void* out, std::size_t begin, std::size_t n, Plan plan, const ElementRounding& r)
{
    std::uint32_t lost = 0;
#pragma omp simd reduction(| : lost)
    for (std::size_t i = 0; i < n; ++i)
        lost |= store<OutBf16>(out, begin + i, roundOne(load<InBf16>(in, begin + i), plan.multiplier, plan.scale, r));
    return lost;
}

template <bool InBf16, bool OutBf16>
std::uint32_t roundLanes(const void* in, void* out, std::size_t begin, std::size_t n, const float* multiplier,
                         const float* scale, const ElementRounding& r)
{
    std::uint32_t lost = 0;
#pragma omp simd reduction(| : lost)
    for (std::size_t i = 0; i < n; ++i)
        lost |= store<OutBf16>(out, begin + i, roundOne(load<InBf16>(in, begin + i), multiplier[i], scale[i], r));
    return lost;
}

template <bool InBf16>
std::uint32_t amaxRows(const void* in, std::size_t begin, std::size_t n, std::size_t rows, std::size_t stride)
{
    std::uint32_t m = 0;
    for (std::size_t r = 0; r < rows; ++r)
        m = std::max(m, amaxBits<InBf16>(in, begin + r * stride, n));
    return m;
}

template <bool InBf16, bool OutBf16>
std::uint32_t roundRows(const void* in, void* out, std::size_t begin, std::size_t n, std::size_t rows,
                        std::size_t stride, Plan plan, const ElementRounding& r)
{
    std::uint32_t lost = 0;
    for (std::size_t row = 0; row < rows; ++row)
        lost |= round<InBf16, OutBf16>(in, out, begin + row * stride, n, plan, r);
    return lost;
}

template <bool InBf16>
void amaxBlocks(const void* in, std::size_t begin, std::size_t n, std::size_t block, std::uint32_t* amax)
{
    for (std::size_t b = 0, at = 0; at < n; ++b, at += block)
        amax[b] = amaxBits<InBf16>(in, begin + at, std::min(block, n - at));
}

template <bool InBf16, bool OutBf16>
std::uint32_t roundBlocks(const void* in, void* out, std::size_t begin, std::size_t n, std::size_t block,
                          const float* multiplier, const float* scale, const ElementRounding& r)
{
    std::uint32_t lost = 0;
    for (std::size_t b = 0, at = 0; at < n; ++b, at += block)
        lost |= round<InBf16, OutBf16>(in, out, begin + at, std::min(block, n - at), Plan{multiplier[b], scale[b]}, r);
    return lost;
}

template <bool InBf16, bool OutBf16>
constexpr SimdOps kOps{
    amaxBits<InBf16>, amaxLanes<InBf16>,          round<InBf16, OutBf16>, roundLanes<InBf16, OutBf16>,
    amaxRows<InBf16>, roundRows<InBf16, OutBf16>, amaxBlocks<InBf16>,     roundBlocks<InBf16, OutBf16>};

template <bool InBf16, bool OutBf16>
std::uint32_t stochasticRuns(const void* in, void* out, std::size_t begin, std::size_t n, std::size_t run,
                             const float* multiplier, const float* scale, const ElementRounding& r, Draws d)
{
    std::uint32_t lost = 0;
    for (std::size_t j = 0, at = 0; at < n; ++j, at += run) {
        const std::size_t end = std::min(n, at + run);
        for (std::size_t i = at; i < end; ++i) {
            const std::uint64_t random = stochasticBits(d.stream, d.first + i * d.stride);
            lost |= store<OutBf16>(out, begin + i,
                                   roundOneStochastic(load<InBf16>(in, begin + i), multiplier[j], scale[j], r, random));
        }
    }
    return lost;
}

template <bool InBf16, bool OutBf16>
std::uint32_t stochasticLanes(const void* in, void* out, std::size_t begin, std::size_t n, const float* multiplier,
                              const float* scale, const ElementRounding& r, Draws d)
{
    std::uint32_t lost = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t random = stochasticBits(d.stream, d.first + i * d.stride);
        lost |= store<OutBf16>(out, begin + i,
                               roundOneStochastic(load<InBf16>(in, begin + i), multiplier[i], scale[i], r, random));
    }
    return lost;
}

template <bool InBf16, bool OutBf16>
constexpr StochasticOps kStochasticOps{stochasticRuns<InBf16, OutBf16>, stochasticLanes<InBf16, OutBf16>};

std::atomic<bool> g_avx512Allowed{true};

} // namespace

const SimdOps& portableOps(bool inBf16, bool outBf16)
{
    if (inBf16)
        return outBf16 ? kOps<true, true> : kOps<true, false>;
    return outBf16 ? kOps<false, true> : kOps<false, false>;
}

const StochasticOps& stochasticOps(bool inBf16, bool outBf16)
{
    if (g_avx512Allowed.load(std::memory_order_relaxed))
        if (const StochasticOps* ops = avx512StochasticOps(inBf16, outBf16))
            return *ops;
    if (inBf16)
        return outBf16 ? kStochasticOps<true, true> : kStochasticOps<true, false>;
    return outBf16 ? kStochasticOps<false, true> : kStochasticOps<false, false>;
}

const SimdOps& simdOps(bool inBf16, bool outBf16)
{
    if (g_avx512Allowed.load(std::memory_order_relaxed))
        if (const SimdOps* ops = avx512Ops(inBf16, outBf16))
            return *ops;
    return portableOps(inBf16, outBf16);
}

} // namespace mantissa::fastq

namespace mantissa {

bool allowAvx512FastQuantizer(bool allowed) { return fastq::g_avx512Allowed.exchange(allowed); }

bool fastQuantizerUsesAvx512() { return fastq::g_avx512Allowed.load() && fastq::avx512Ops(false, false) != nullptr; }

} // namespace mantissa
