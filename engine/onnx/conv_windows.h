#pragma once
// What the compilers of the windowed ops on NCHW images (Conv, ConvTranspose, the pools) share:
// the image they read (1-D images as 2-D ones of height 1), their weight, their per-axis
// attributes, the padding ONNX gives each side of an axis, and the crop that turns the engine's
// symmetric padding into ONNX's asymmetric one. The engine pads both sides of an
// axis alike (geometry.h); ONNX may pad one side more (auto_pad SAME_* with an odd total,
// explicit pads, a ConvTranspose's output_shape), which compiles as a larger symmetric padding
// whose extra outputs a crop drops.
#include "engine/onnx/onnx_compiler.h"

#include "engine/model/layer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mantissa::onnx_import {

std::string joined(const std::vector<std::int64_t>& values); // "[1, 2]"

// An ints attribute of one value per spatial axis (H, W), `fallback` for both when absent;
// refuses another count, and values below `least`.
std::vector<std::int64_t> perAxis(OnnxCompiler& c, const OnnxNode& node, const std::string& name, std::int64_t fallback,
                                  std::int64_t least = 1);

// A windowed node (Conv, ConvTranspose, a pool) as the engine's 2-D kernels run it. A 2-D node
// reads [C, H, W] per sample as it is. A 1-D one reads [C, L] and runs on the image [C, 1, L]:
// its per-axis attributes gain an axis of extent 1 in front (kernel 1, stride 1, dilation 1, no
// padding), and its weight [F, C / group, k] is read as [F, C / group, 1, k], the same values in
// the same order. Any other rank is refused, naming the node: the engine has no 3-D convolution
// or pooling.
struct ImageNode {
    OnnxNode node; // the node, its per-axis attributes in 2-D form
    ValueId input = 0;
    Shape image;       // {channels, height, width}
    bool line = false; // a 1-D node
};
ImageNode imageNode(OnnxCompiler& c, const OnnxNode& node);

// The node's layer on its image, in a group named by the node (a 1-D input viewed as [C, 1, L]
// by an op of that group first); the value it computes, for the node's other ops to finish.
ValueId appendImageLayer(OnnxCompiler& c, const ImageNode& image, LayerPtr layer,
                         std::vector<const OnnxTensor*> initializers);
// Names `value`, {channels, height, width} per sample, as the node's output; a 1-D node's
// viewed as [channels, width] by an op of its group.
void bindImage(OnnxCompiler& c, const ImageNode& image, ValueId value);

// A Conv's or ConvTranspose's weight, checked against its image: `group` divides the input
// channels; W is [filters, C / group, kH, kW] with filters a multiple of the group for a
// convolution, [C, out channels / group, kH, kW] for a transposed one; kernel_shape, where
// given, is W's kernel.
enum class ConvDirection { Forward, Transposed };
struct ConvWeight {
    const OnnxTensor* tensor = nullptr;
    std::vector<std::int64_t> dims; // as the 2-D kernels read it
    std::int64_t groups = 1;
    std::vector<std::int64_t> kernel; // {kH, kW}
};
ConvWeight convWeight(OnnxCompiler& c, const ImageNode& image, ConvDirection direction);

// The initializers a Conv's or ConvTranspose's layer takes: W, then B where the node has one,
// checked to be [outputChannels] (the layer's output channels, whichever way it runs).
struct ConvInitializers {
    std::vector<const OnnxTensor*> tensors;
    bool hasBias = false;
};
ConvInitializers convInitializers(OnnxCompiler& c, const OnnxNode& node, const ConvWeight& weight,
                                  std::int64_t outputChannels);

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
