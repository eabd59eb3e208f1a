#pragma once
// How a tensor is scaled into one of the formats of minifloat_format.h (issue 17): the
// element format plus a scaling scheme, with the scheme's block size and scale rule.
//  - None:       the element format alone (a plain cast, scale 1).
//  - PerTensor:  one fp32 scale for the tensor, s = max(format) / amax (Transformer Engine's
//                current scaling; optionally a power of two).
//  - Fp32Blocks: the same per block of blockSize values along a row (DeepSeek-V3's 1x128 tiles,
//                as Transformer Engine's Float8BlockScaling implements them).
//  - Mx:         an E8M0 power-of-two scale per block of 32 (OCP MX v1.0).
//  - Nvfp4:      E2M1 elements, an E4M3 scale per block of 16 and an fp32 scale per tensor.
// Blocks run along rows (the K dimension of a GEMM operand): a span is rows of rowLength
// values, and a 1D block never crosses a row; a 2D tile (blockRows > 1) covers blockRows
// neighbouring rows of blockSize values each.
#include "engine/numerics/minifloat_codec.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace mantissa {

enum class ScalingScheme : std::uint8_t { None, PerTensor, Fp32Blocks, Mx, Nvfp4 };

// How an MX block's E8M0 exponent follows from its largest magnitude amax, for an element
// format whose largest value is max with exponent emax = floor(log2(max)):
//   Floor: floor(log2(amax)) - emax          (OCP MX v1.0 section 6.3; can clip: 957 -> 896)
//   Ceil:  ceil(log2(amax)) - emax           (torchao's CEIL; never clips)
//   RCeil: ceil(log2(amax / max))            (torchao's RCEIL, NVIDIA's cvt.rp to ue8m0; never clips)
enum class MxScaleRule : std::uint8_t { Floor, Ceil, RCeil };

// A row length that is not a multiple of the block size (or, for 2D tiles, a row count that is
// not a multiple of the tile's rows): Refuse (a ConfigError naming both) or Pad, where the last
// block of each row (and the last tile row) is short, exactly as if padded with zeros (zeros
// change neither the block's amax nor its scale, and come back as zeros).
enum class PartialBlock : std::uint8_t { Refuse, Pad };

template <>
std::span<const EnumEntry<MxScaleRule>> enumEntries<MxScaleRule>();

struct QuantFormat {
    ScalingScheme scheme = ScalingScheme::None;
    MiniFloat element = MiniFloat::E4M3;
    std::size_t blockSize = 0; // Fp32Blocks, Mx, Nvfp4; unused by None and PerTensor
    // Rows one block spans: 1 for the 1D blocks along a row; blockSize for square 2D tiles
    // (NVFP4's 16x16 weight blocks: one scale per tile of blockRows rows x blockSize values).
    std::size_t blockRows = 1;
    MxScaleRule scaleRule = MxScaleRule::Floor;
    bool powerOfTwoScales = false; // PerTensor and Fp32Blocks: round the scale down to 2^k
    PartialBlock partialBlocks = PartialBlock::Refuse;
    // Rounding and its seed for the elements. The overflow rule applies to None only: the
    // scaled schemes saturate their elements (OCP MX v1.0 section 6.3; Transformer Engine and
    // NVFP4 cast with satfinite), so a clipped value is counted, never an Inf or NaN.
    MiniFloatEncoding encoding;

    bool isBlocked() const
    {
        return scheme == ScalingScheme::Fp32Blocks || scheme == ScalingScheme::Mx || scheme == ScalingScheme::Nvfp4;
    }
};

// The named formats the CLI and configs accept ("e4m3", "mxfp8", "nvfp4", "fp8-block", ...).
struct NamedQuantFormat {
    std::string_view name;
    QuantFormat format;
    std::string_view description;
};
std::span<const NamedQuantFormat> namedQuantFormats();
std::optional<QuantFormat> quantFormatNamed(std::string_view name);
std::string quantFormatNameList(); // "e4m3, e5m2, ..., fp8-block" for messages
// Why `name` is not a format: unknown (with the list), or ambiguous ("mxfp6": either element).
std::string unknownQuantFormatMessage(std::string_view name);

// A ConfigError naming the problem when `format` cannot be used (no block size, an E8M0 or
// non-E2M1 element where the scheme forbids it).
void validateQuantFormat(const QuantFormat& format);

// "MX, E4M3 elements, blocks of 32, E8M0 scale (floor)": one line for the terminal.
std::string describeQuantFormat(const QuantFormat& format);

} // namespace mantissa
