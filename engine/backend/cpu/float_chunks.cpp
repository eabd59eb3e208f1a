#include "engine/backend/cpu/float_chunks.h"

#include "engine/numerics/conversions.h"

namespace mantissa::cpu {

const float* floatsOf(const Tensor& t, std::size_t begin, std::size_t count, float* scratch)
{
    const auto* words = static_cast<const std::uint16_t*>(t.data());
    switch (t.dtype()) {
    case DType::F32: return t.f32() + begin;
    case DType::F16: halfToFloat(words + begin, scratch, count); return scratch;
    case DType::BF16: bfloat16ToFloat(words + begin, scratch, count); return scratch;
    }
    return nullptr;
}

float* floatSlot(Tensor& t, std::size_t begin, float* scratch)
{
    return t.dtype() == DType::F32 ? t.f32() + begin : scratch;
}

void storeFloats(Tensor& t, std::size_t begin, std::size_t count, const float* slot)
{
    auto* words = static_cast<std::uint16_t*>(t.data());
    switch (t.dtype()) {
    case DType::F32: return; // written in place
    case DType::F16: floatToHalf(slot, words + begin, count); return;
    case DType::BF16: floatToBFloat16(slot, words + begin, count); return;
    }
}

} // namespace mantissa::cpu
