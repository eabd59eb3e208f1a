#pragma once
// What the compilers of the windowed ops on NCHW images (Conv, ConvTranspose, the pools) share:
// their per-axis attributes, the padding ONNX gives each side of an axis, and the crop that turns
// the engine's symmetric padding into ONNX's asymmetric one. The engine pads both sides of an
// axis alike (geometry.h); ONNX may pad one side more (auto_pad SAME_* with an odd total,
// explicit pads, a ConvTranspose's output_shape), which compiles as a larger symmetric padding
// whose extra outputs a crop drops.
#include "engine/onnx/onnx_compiler.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mantissa::onnx_import {

std::string joined(const std::vector<std::int64_t>& values); // "[1, 2]"

// An ints attribute of one value per spatial axis (H, W), `fallback` for both when absent;
// refuses another count, and values below `least`.
std::vector<std::int64_t> perAxis(OnnxCompiler& c, const OnnxNode& node, const std::string& name, std::int64_t fallback,
                                  std::int64_t least = 1);

// The input's per-sample shape, which must be an image {channels, height, width}.
const Shape& imageShape(OnnxCompiler& c, const OnnxNode& node, ValueId input);

// The padding before and after one axis.
struct AxisPads {
    std::int64_t begin = 0, end = 0;
    bool symmetric() const { return begin == end; }
};

// Conv's and the pools' padding of both axes, from `pads` or `auto_pad` (SAME_UPPER puts the odd
// pixel at the end, SAME_LOWER at the beginning).
std::vector<AxisPads> windowPads(OnnxCompiler& c, const OnnxNode& node, const Shape& image,
                                 const std::vector<std::int64_t>& kernel, const std::vector<std::int64_t>& stride,
                                 const std::vector<std::int64_t>& dilation);

// Where the engine's outputs along both axes start and how many ONNX keeps: the outputs
// [skip, skip + kept) of the `computed` ones. No crop where skip is 0 and kept is computed.
struct AxisCrop {
    std::int64_t skip = 0, kept = 0, computed = 0;
    bool none() const { return skip == 0 && kept == computed; }
};

// The values [channels, computed H, computed W] per sample of `value` cropped to ONNX's
// [channels, kept H, kept W], as an op of the node's group (index_map_op.h); `value` itself
// where neither axis crops.
ValueId cropImage(OnnxCompiler& c, const OnnxNode& node, ValueId value, const std::vector<AxisCrop>& crops);

} // namespace mantissa::onnx_import
