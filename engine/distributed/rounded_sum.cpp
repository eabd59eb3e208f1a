#include "engine/distributed/rounded_sum.h"

#include "engine/numerics/reference_conversions.h"
#include "engine/util/check.h"

namespace mantissa {

using namespace reference;

void addRoundedWords(const std::uint16_t* in, std::uint16_t* inout, std::size_t n, DType type)
{
    MANTISSA_ASSERT(type == DType::F16 || type == DType::BF16);
    if (type == DType::F16) {
        for (std::size_t i = 0; i < n; ++i)
            inout[i] = floatToHalfBits(halfBitsToFloat(in[i]) + halfBitsToFloat(inout[i]));
    } else {
        for (std::size_t i = 0; i < n; ++i)
            inout[i] = floatToBFloat16Bits(bfloat16BitsToFloat(in[i]) + bfloat16BitsToFloat(inout[i]));
    }
}

} // namespace mantissa
