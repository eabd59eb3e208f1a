#pragma once
// The three floating-point storage types Mantissa trains in.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mantissa {

enum class DType : std::uint8_t { F32, F16, BF16 };

// Size of one element in bytes: 4 for f32, 2 for f16 and bf16.
constexpr std::size_t dtypeSize(DType t) { return t == DType::F32 ? 4 : 2; }

// "fp32", "fp16", "bf16": the spelling used in configs, the CLI and the UI.
std::string_view dtypeName(DType t);

// Accepts "fp32"/"f32"/"float32", "fp16"/"f16"/"half"/"float16", "bf16"/"bfloat16".
std::optional<DType> parseDType(std::string_view text);

// Range facts a user studies; kept here so the UI, the docs and the tests agree.
struct DTypeLimits {
    float maxFinite;    // 65504 for fp16
    float minNormal;    // 2^-14 for fp16
    float minSubnormal; // 2^-24 for fp16
    int mantissaBits;   // stored fraction bits: 23, 10, 7
};
DTypeLimits dtypeLimits(DType t);

} // namespace mantissa
