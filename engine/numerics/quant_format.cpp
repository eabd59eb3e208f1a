#include "engine/numerics/quant_format.h"

#include "engine/util/check.h"

namespace mantissa {

namespace {

constexpr EnumEntry<MxScaleRule> kScaleRuleEntries[] = {
    {MxScaleRule::Floor, "floor", "Floor (OCP MX)",
     "floor(log2(amax)) - emax, as OCP MX v1.0 specifies; the block's largest value can clip"},
    {MxScaleRule::Ceil, "ceil", "Ceil", "ceil(log2(amax)) - emax (torchao CEIL): never clips, may waste range"},
    {MxScaleRule::RCeil, "rceil", "RCeil", "ceil(log2(amax / max)) (torchao RCEIL, NVIDIA hardware): never clips"},
};

constexpr QuantFormat scaled(ScalingScheme scheme, MiniFloat element, std::size_t blockSize)
{
    QuantFormat format;
    format.scheme = scheme;
    format.element = element;
    format.blockSize = blockSize;
    return format;
}
constexpr QuantFormat plain(MiniFloat element) { return scaled(ScalingScheme::None, element, 0); }
constexpr QuantFormat mx(MiniFloat element) { return scaled(ScalingScheme::Mx, element, 32); } // OCP MX v1.0: k = 32
constexpr QuantFormat perTensor(MiniFloat element) { return scaled(ScalingScheme::PerTensor, element, 0); }
constexpr QuantFormat fp32Blocks(MiniFloat element) { return scaled(ScalingScheme::Fp32Blocks, element, 128); }

const NamedQuantFormat kNamed[] = {
    {"e4m3", plain(MiniFloat::E4M3), "FP8 E4M3 (OCP \"fn\"), no scaling"},
    {"e5m2", plain(MiniFloat::E5M2), "FP8 E5M2, no scaling"},
    {"e3m2", plain(MiniFloat::E3M2), "FP6 E3M2, no scaling"},
    {"e2m3", plain(MiniFloat::E2M3), "FP6 E2M3, no scaling"},
    {"e2m1", plain(MiniFloat::E2M1), "FP4 E2M1, no scaling"},
    {"e8m0", plain(MiniFloat::E8M0), "the E8M0 scale format itself"},
    {"mxfp8", mx(MiniFloat::E4M3), "MXFP8: E4M3 elements, E8M0 scale per 32 (OCP MX v1.0)"},
    {"mxfp8-e4m3", mx(MiniFloat::E4M3), "the same as mxfp8"},
    {"mxfp8-e5m2", mx(MiniFloat::E5M2), "MXFP8 with E5M2 elements"},
    // No bare "mxfp6": OCP MX defines MXFP6 with either element, and the mxfp6 recipe uses both.
    {"mxfp6-e2m3", mx(MiniFloat::E2M3), "MXFP6 with E2M3 elements (the mxfp6 recipe's activations and weights)"},
    {"mxfp6-e3m2", mx(MiniFloat::E3M2), "MXFP6 with E3M2 elements (the mxfp6 recipe's gradients)"},
    {"mxfp4", mx(MiniFloat::E2M1), "MXFP4: E2M1 elements, E8M0 scale per 32"},
    {"nvfp4", scaled(ScalingScheme::Nvfp4, MiniFloat::E2M1, 16),
     "NVFP4: E2M1 elements, E4M3 scale per 16, fp32 scale per tensor"},
    {"fp8-tensor", perTensor(MiniFloat::E4M3), "E4M3, one fp32 scale max/amax per tensor (TE current scaling)"},
    {"fp8-tensor-e5m2", perTensor(MiniFloat::E5M2), "E5M2, one fp32 scale per tensor"},
    {"fp8-block", fp32Blocks(MiniFloat::E4M3), "E4M3, an fp32 scale per 1x128 block (DeepSeek-V3)"},
    {"fp8-block-e5m2", fp32Blocks(MiniFloat::E5M2), "E5M2, an fp32 scale per 1x128 block"},
};

} // namespace

template <>
std::span<const EnumEntry<MxScaleRule>> enumEntries<MxScaleRule>()
{
    return kScaleRuleEntries;
}

std::span<const NamedQuantFormat> namedQuantFormats() { return kNamed; }

std::optional<QuantFormat> quantFormatNamed(std::string_view name)
{
    for (const NamedQuantFormat& named : kNamed)
        if (named.name == name)
            return named.format;
    return std::nullopt;
}

std::string unknownQuantFormatMessage(std::string_view name)
{
    if (name == "mxfp6")
        return "\"mxfp6\" names two element formats (OCP MX v1.0): mxfp6-e2m3, which the mxfp6 recipe gives "
               "activations and weights, or mxfp6-e3m2, which it gives gradients";
    return "unknown format \"" + std::string(name) + "\"; expected one of " + quantFormatNameList();
}

std::string quantFormatNameList()
{
    std::string list;
    for (const NamedQuantFormat& named : kNamed)
        list += (list.empty() ? "" : ", ") + std::string(named.name);
    return list;
}

void validateQuantFormat(const QuantFormat& format)
{
    const std::string element(enumKey(format.element));
    if (format.scheme != ScalingScheme::None && format.element == MiniFloat::E8M0)
        throw ConfigError("e8m0 is a scale format; a scaled tensor needs an element format (e4m3, e5m2, e3m2, "
                          "e2m3 or e2m1)");
    if (format.scheme == ScalingScheme::Nvfp4 && format.element != MiniFloat::E2M1)
        throw ConfigError("NVFP4 elements are e2m1, not " + element);
    if (format.isBlocked() && format.blockSize == 0)
        throw ConfigError("a block size of 0: give a positive block size (MX uses 32, NVFP4 16, DeepSeek-V3 128)");
    if (format.blockRows == 0 || (format.blockRows > 1 && !format.isBlocked()))
        throw ConfigError("2D tiles of " + std::to_string(format.blockRows) +
                          " rows need a block format (fp8-block, MX or NVFP4) and at least one row per tile");
}

std::string describeQuantFormat(const QuantFormat& format)
{
    const std::string element(enumEntry(format.element).displayName);
    const std::string blocks =
        format.blockRows > 1 ? "tiles of " + std::to_string(format.blockRows) + "x" + std::to_string(format.blockSize)
                             : "blocks of " + std::to_string(format.blockSize);
    const std::string pow2 = format.powerOfTwoScales ? ", power of two" : "";
    switch (format.scheme) {
    case ScalingScheme::None: return element + ", no scaling";
    case ScalingScheme::PerTensor: return element + " elements, one fp32 scale per tensor (max / amax" + pow2 + ")";
    case ScalingScheme::Fp32Blocks: return element + " elements, " + blocks + ", fp32 scale (max / amax" + pow2 + ")";
    case ScalingScheme::Mx:
        return "MX: " + element + " elements, " + blocks + ", E8M0 scale (" + std::string(enumKey(format.scaleRule)) +
               ")";
    case ScalingScheme::Nvfp4: return "NVFP4: " + element + " elements, " + blocks + ", E4M3 scale, fp32 tensor scale";
    }
    return element;
}

} // namespace mantissa
