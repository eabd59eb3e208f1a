#include "engine/numerics/dtype.h"

#include <cmath>
#include <limits>

namespace mantissa {

std::string_view dtypeName(DType t)
{
    switch (t) {
    case DType::F32: return "fp32";
    case DType::F16: return "fp16";
    case DType::BF16: return "bf16";
    }
    return "?";
}

std::optional<DType> parseDType(std::string_view text)
{
    if (text == "fp32" || text == "f32" || text == "float32")
        return DType::F32;
    if (text == "fp16" || text == "f16" || text == "half" || text == "float16")
        return DType::F16;
    if (text == "bf16" || text == "bfloat16")
        return DType::BF16;
    return std::nullopt;
}

DTypeLimits dtypeLimits(DType t)
{
    switch (t) {
    case DType::F16: return {65504.0f, std::ldexp(1.0f, -14), std::ldexp(1.0f, -24), 10};
    case DType::BF16: return {std::ldexp(255.0f / 128.0f, 127), std::ldexp(1.0f, -126), std::ldexp(1.0f, -133), 7};
    case DType::F32: break;
    }
    return {std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
            std::numeric_limits<float>::denorm_min(), 23};
}

} // namespace mantissa
