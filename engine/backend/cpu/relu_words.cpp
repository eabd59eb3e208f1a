#include "engine/backend/cpu/relu_words.h"

#include "engine/util/check.h"

namespace mantissa::cpu {

namespace {

struct WordLayout {
    std::uint16_t infinity; // the positive infinity's word; above it (sign clear) are the NaNs
    std::uint16_t quietBit; // set on a NaN by rounding from fp32 (reference_conversions.h)
};

WordLayout layoutOf(DType type)
{
    MANTISSA_ASSERT(type == DType::F16 || type == DType::BF16);
    return type == DType::F16 ? WordLayout{0x7c00, 0x0200} : WordLayout{0x7f80, 0x0040};
}

// x > 0 for the value a word holds: sign clear, not zero, not NaN.
inline bool positive(std::uint16_t w, std::uint16_t infinity) { return w != 0 && w <= infinity; }

inline bool isNan(std::uint16_t w, std::uint16_t infinity) { return (w & 0x7fffu) > infinity; }

// Memory-bound selects: split across the team only where the tensor is large.
constexpr std::int64_t kParallelFrom = std::int64_t{1} << 16;

} // namespace

void reluForwardWords(const std::uint16_t* x, std::uint16_t* y, std::size_t n, DType type)
{
    const std::uint16_t inf = layoutOf(type).infinity;
    const auto count = static_cast<std::int64_t>(n);
#pragma omp parallel for simd schedule(static) if (count >= kParallelFrom)
    for (std::int64_t i = 0; i < count; ++i)
        y[i] = positive(x[i], inf) ? x[i] : std::uint16_t{0};
}

void reluBackwardWords(const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx, std::size_t n, DType type)
{
    const WordLayout l = layoutOf(type);
    const auto count = static_cast<std::int64_t>(n);
#pragma omp parallel for simd schedule(static) if (count >= kParallelFrom)
    for (std::int64_t i = 0; i < count; ++i) {
        const std::uint16_t g = isNan(dy[i], l.infinity) ? static_cast<std::uint16_t>(dy[i] | l.quietBit) : dy[i];
        dx[i] = positive(x[i], l.infinity) ? g : std::uint16_t{0};
    }
}

} // namespace mantissa::cpu
