// ConvTranspose on NCHW images (and NCL ones, as images of height 1: conv_windows.h) as the data
// gradient of the convolution it transposes (conv_transpose_layer.h): groups, strides,
// dilations, output_padding, and the padding from pads, auto_pad or output_shape. ONNX's output row o is row o + begin of the full transposed
// convolution (the one without padding, stride x (in - 1) + span rows, then zeros); the engine
// computes rows [P, P + E) of it for its symmetric padding P = begin and any E whose convolution
// gives back the input's extent, E within a stride of the full rows less 2P. An extent ONNX asks
// for below that range keeps the first rows of E (a crop); above it, or a negative begin, would
// need rows the engine does not compute, and is refused.
#include "engine/onnx/conv_transpose_layer.h"
#include "engine/onnx/conv_windows.h"
#include "engine/onnx/node_compilers.h"

#include <algorithm>

namespace mantissa::onnx_import {

namespace {

// Floor division, which ONNX's padding equations mean for a negative total (an output_shape
// past the full rows).
std::int64_t floorHalf(std::int64_t total) { return total >= 0 ? total / 2 : -((-total + 1) / 2); }

// The padding of both axes. output_shape, where given, sets the total padding (and auto_pad
// only which side takes the odd pixel); auto_pad SAME_* asks for input x stride outputs; else
// pads. ONNX: an odd total puts the extra pixel at the end for SAME_UPPER and at the beginning
// otherwise.
std::vector<AxisPads> transposedPads(OnnxCompiler& c, const OnnxNode& node, const Shape& image,
                                     const std::vector<std::int64_t>& kernel, const std::vector<std::int64_t>& stride,
                                     const std::vector<std::int64_t>& dilation,
                                     const std::vector<std::int64_t>& outputPadding)
{
    const std::string autoPad = node.stringAttribute("auto_pad", "NOTSET");
    if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
        c.refuse(node, "auto_pad '" + autoPad + "' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER");
    std::vector<std::int64_t> target = node.intsAttribute("output_shape");
    if (target.size() == 4) // N and C given too
        target.erase(target.begin(), target.begin() + 2);
    if (node.attribute("output_shape") && target.size() != 2)
        c.refuse(node, "output_shape " + joined(node.intsAttribute("output_shape")) +
                           " must give the output's height and width");
    if (target.empty() && (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER"))
        target = {image[1] * stride[0], image[2] * stride[1]};
    if (target.empty()) {
        if (autoPad == "VALID" || !node.attribute("pads"))
            return {{}, {}};
        const std::vector<std::int64_t> pads = node.intsAttribute("pads");
        if (pads.size() != 4)
            c.refuse(node, "pads " + joined(pads) + " must have four values (begin and end of H and W)");
        return {{pads[0], pads[2]}, {pads[1], pads[3]}};
    }
    std::vector<AxisPads> pads(2);
    for (std::size_t a = 0; a < 2; ++a) {
        const std::int64_t full = stride[a] * (image[a + 1] - 1) + outputPadding[a] + dilation[a] * (kernel[a] - 1) + 1;
        const std::int64_t total = full - target[a];
        const std::int64_t half = floorHalf(total);
        pads[a] = autoPad == "SAME_UPPER" ? AxisPads{half, total - half} : AxisPads{total - half, half};
    }
    return pads;
}

// The engine's geometry along one axis: the symmetric padding, the extent E the transposed
// convolution computes (the convolution's input extent) and the crop to ONNX's extent.
struct TransposedAxis {
    std::int64_t pad = 0;
    AxisCrop crop;
};

TransposedAxis transposedAxis(OnnxCompiler& c, const OnnxNode& node, std::int64_t in, std::int64_t kernel,
                              std::int64_t stride, std::int64_t dilation, std::int64_t outputPadding, AxisPads pads)
{
    const std::int64_t span = dilation * (kernel - 1) + 1;
    const std::int64_t out = stride * (in - 1) + outputPadding + span - pads.begin - pads.end;
    const std::string what = "padding " + std::to_string(pads.begin) + " before and " + std::to_string(pads.end) +
                             " after with output_padding " + std::to_string(outputPadding);
    if (out < 1)
        c.refuse(node, what + " leaves no output");
    if (pads.begin < 0)
        c.refuse(node, what + " starts the output before the transposed convolution's first row, which does not "
                              "compile");
    TransposedAxis axis;
    axis.pad = pads.begin;
    // The extents whose convolution with this padding gives back `in`: [least, least + stride).
    const std::int64_t least = stride * (in - 1) + span - 2 * pads.begin;
    if (out >= least + stride)
        c.refuse(node, what + " asks for rows past the last the transposed convolution reaches (" +
                           std::to_string(out - least - stride + 1) + " more), which does not compile");
    axis.crop.computed = std::max(out, least);
    axis.crop.kept = out;
    if (axis.crop.computed < 1 || slidingOutput(axis.crop.computed, kernel, stride, axis.pad, dilation) != in)
        c.refuse(node, what + " gives no convolution of this kernel that the engine computes");
    return axis;
}

void compileConvTranspose(OnnxCompiler& c, const OnnxNode& original)
{
    const ImageNode in = imageNode(c, original);
    const OnnxNode& node = in.node;
    const Shape& image = in.image;
    const ConvWeight weight = convWeight(c, in, ConvDirection::Transposed);
    const std::vector<std::int64_t>& kernel = weight.kernel;
    const std::int64_t groups = weight.groups;
    const std::vector<std::int64_t> stride = perAxis(c, node, "strides", 1);
    const std::vector<std::int64_t> dilation = perAxis(c, node, "dilations", 1);
    const std::vector<std::int64_t> outputPadding = perAxis(c, node, "output_padding", 0, 0);
    const std::vector<AxisPads> pads = transposedPads(c, node, image, kernel, stride, dilation, outputPadding);
    const TransposedAxis h =
        transposedAxis(c, node, image[1], kernel[0], stride[0], dilation[0], outputPadding[0], pads[0]);
    const TransposedAxis w =
        transposedAxis(c, node, image[2], kernel[1], stride[1], dilation[1], outputPadding[1], pads[1]);

    // The convolution this one transposes: its input is the output here, and W is its weight.
    ConvGeometry g;
    g.inChannels = weight.dims[1] * groups;
    g.inH = h.crop.computed;
    g.inW = w.crop.computed;
    g.outChannels = image[0];
    g.kH = kernel[0];
    g.kW = kernel[1];
    g.strideH = stride[0];
    g.strideW = stride[1];
    g.padH = h.pad;
    g.padW = w.pad;
    g.dilationH = dilation[0];
    g.dilationW = dilation[1];
    g.groups = groups;
    g.outH = image[1];
    g.outW = image[2];
    ConvInitializers initializers = convInitializers(c, node, weight, g.inChannels);
    const ValueId computed = appendImageLayer(c, in, std::make_unique<ConvTranspose2d>(g, initializers.hasBias),
                                              std::move(initializers.tensors));
    bindImage(c, in, cropImage(c, node, computed, {h.crop, w.crop}));
}

} // namespace

void addConvTransposeNodeCompiler(NodeCompilerTable& table) { table["ConvTranspose"] = compileConvTranspose; }

} // namespace mantissa::onnx_import
