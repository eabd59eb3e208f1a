#include "engine/backend/cpu/float_slice.h"

#include "engine/numerics/conversions.h"

#include <cstring>

namespace mantissa::cpu {

const float* readFloats(const Tensor& t, std::int64_t offset, std::int64_t count, float* scratch)
{
    if (t.dtype() == DType::F32)
        return t.f32() + offset;
    widenToFloat(t.u16() + offset, t.dtype(), scratch, static_cast<std::size_t>(count));
    return scratch;
}

void writeFloats(const float* values, Tensor& t, std::int64_t offset, std::int64_t count)
{
    if (t.dtype() == DType::F32) {
        float* out = t.f32() + offset;
        if (out != values)
            std::memcpy(out, values, static_cast<std::size_t>(count) * sizeof(float));
        return;
    }
    narrowFromFloat(values, t.u16() + offset, static_cast<std::size_t>(count), t.dtype());
}

} // namespace mantissa::cpu
