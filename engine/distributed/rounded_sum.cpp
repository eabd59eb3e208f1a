#include "engine/distributed/rounded_sum.h"

#include "engine/numerics/conversions.h"
#include "engine/numerics/reference_conversions.h"
#include "engine/util/check.h"

#include <algorithm>

namespace mantissa {

using namespace reference;

namespace {

// IEEE 754 leaves open which NaN an addition of two NaNs returns (x86 returns its first
// operand's, and a compiler may swap the operands of a commutative add), so the rule is made
// explicit here: a NaN in `in` wins, quietened as the addition would. Integer compares only,
// which the compiler vectorises.
void keepFirstNaN(const std::uint16_t* in, std::uint16_t* inout, std::size_t n, DType type)
{
    const std::uint16_t inf = type == DType::F16 ? 0x7c00 : 0x7f80;
    const std::uint16_t quiet = type == DType::F16 ? 0x0200 : 0x0040;
    for (std::size_t i = 0; i < n; ++i)
        inout[i] = (in[i] & 0x7fff) > inf ? static_cast<std::uint16_t>(in[i] | quiet) : inout[i];
}

} // namespace

void addRoundedWords(const std::uint16_t* in, std::uint16_t* inout, std::size_t n, DType type)
{
    MANTISSA_ASSERT(type == DType::F16 || type == DType::BF16);
    // Chunks on the stack: MPI calls this from its reduction op with buffers of its own size,
    // where allocating would cost more than the arithmetic. The widening is exact, the fp32
    // addition is the reference's, and the narrowing is bit-identical to the reference's.
    constexpr std::size_t kChunk = 1024;
    float a[kChunk], b[kChunk];
    for (std::size_t begin = 0; begin < n; begin += kChunk) {
        const std::size_t count = std::min(kChunk, n - begin);
        if (type == DType::F16) {
            halfToFloat(in + begin, a, count);
            halfToFloat(inout + begin, b, count);
        } else {
            bfloat16ToFloat(in + begin, a, count);
            bfloat16ToFloat(inout + begin, b, count);
        }
        for (std::size_t i = 0; i < count; ++i)
            b[i] = a[i] + b[i];
        if (type == DType::F16)
            floatToHalf(b, inout + begin, count);
        else
            floatToBFloat16(b, inout + begin, count);
        keepFirstNaN(in + begin, inout + begin, count, type);
    }
}

void addRoundedWordsReference(const std::uint16_t* in, std::uint16_t* inout, std::size_t n, DType type)
{
    MANTISSA_ASSERT(type == DType::F16 || type == DType::BF16);
    if (type == DType::F16) {
        for (std::size_t i = 0; i < n; ++i)
            inout[i] = floatToHalfBits(halfBitsToFloat(in[i]) + halfBitsToFloat(inout[i]));
    } else {
        for (std::size_t i = 0; i < n; ++i)
            inout[i] = floatToBFloat16Bits(bfloat16BitsToFloat(in[i]) + bfloat16BitsToFloat(inout[i]));
    }
    keepFirstNaN(in, inout, n, type);
}

} // namespace mantissa
