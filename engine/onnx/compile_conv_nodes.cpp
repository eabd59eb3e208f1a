// The op types convolutional networks (torchvision's ResNets and MobileNets) export to:
// Conv as a convolution layer (groups, dilations, strides, rectangular kernels, any padding),
// training-mode BatchNormalization, MaxPool, AveragePool and the global pools, Dropout, and the
// pointwise functions with parameters (Clip, LeakyRelu, HardSigmoid, HardSwish). Every tensor is
// NCHW, or NCL for the 1-D forms, which run as images of height 1 (conv_windows.h); 3-D forms
// and the attribute values the engine has no kernel for are refused, each naming what it met.
#include "engine/model/layers/batch_norm.h"
#include "engine/model/layers/conv2d.h"
#include "engine/model/layers/dropout.h"
#include "engine/model/layers/pool2d.h"
#include "engine/onnx/conv_windows.h"
#include "engine/onnx/node_compilers.h"
#include "engine/onnx/pointwise_op.h"
#include "engine/util/check.h"

#include <algorithm>
#include <limits>
#include <optional>

namespace mantissa::onnx_import {

namespace {

// The output extents of a pool's windows, from the padding before and after each axis; a window
// that would lie wholly in the padding is refused (its maximum or mean has no input), and
// ceil_mode = 1 compiles where it gives the same extents as rounding down.
std::vector<std::int64_t> windowOutput(OnnxCompiler& c, const OnnxNode& node, const Shape& image,
                                       const std::vector<std::int64_t>& kernel, const std::vector<std::int64_t>& stride,
                                       const std::vector<AxisPads>& pads)
{
    std::vector<std::int64_t> out(2);
    for (std::size_t a = 0; a < 2; ++a) {
        const std::int64_t room = image[a + 1] + pads[a].begin + pads[a].end - kernel[a];
        if (room < 0)
            c.refuse(node, "the window of " + std::to_string(kernel[a]) + " pixels is larger than the padded image " +
                               image.toString());
        out[a] = room / stride[a] + 1;
        if (node.intAttribute("ceil_mode", 0) != 0 && room % stride[a] != 0)
            c.refuse(node, "ceil_mode = 1 adds a partial window here, which does not compile");
        if (pads[a].begin >= kernel[a] || (out[a] - 1) * stride[a] - pads[a].begin >= image[a + 1])
            c.refuse(node, "padding " + std::to_string(pads[a].begin) + " before and " + std::to_string(pads[a].end) +
                               " after an axis of " + std::to_string(image[a + 1]) + " leaves a window of " +
                               std::to_string(kernel[a]) + " wholly in the padding, with no value to pool");
    }
    return out;
}

// The constant a node's optional input names; nullopt where it is left out.
std::optional<float> constantScalar(OnnxCompiler& c, const OnnxNode& node, std::size_t input)
{
    if (input >= node.inputs.size() || node.inputs[input].empty())
        return std::nullopt;
    const OnnxTensor* tensor = c.onnx().constant(node.inputs[input]);
    if (!tensor)
        c.refuse(node, "input '" + node.inputs[input] + "' must be a constant to compile");
    if (tensor->elementCount() != 1)
        c.refuse(node, "input '" + node.inputs[input] + "' must hold one value");
    return tensor->floats.empty() ? static_cast<float>(tensor->ints.at(0)) : tensor->floats.at(0);
}

// Only the first output compiles: Dropout's mask and MaxPool's indices have no op to compute
// them, so a node or a graph output reading one is refused (exporters name the mask unread).
void refuseExtraOutputs(OnnxCompiler& c, const OnnxNode& node, const char* what)
{
    const OnnxGraph& onnx = c.onnx();
    for (std::size_t k = 1; k < node.outputs.size(); ++k) {
        const std::string& name = node.outputs[k];
        if (name.empty())
            continue;
        bool read = std::find(onnx.outputs.begin(), onnx.outputs.end(), name) != onnx.outputs.end();
        for (const OnnxNode& other : onnx.nodes)
            read = read || std::find(other.inputs.begin(), other.inputs.end(), name) != other.inputs.end();
        if (read)
            c.refuse(node, std::string("its output ") + what + " is read, which does not compile");
    }
}

// The engine pads both sides of an axis alike. ONNX's (begin, end) compiles as the padding
// P = begin + stride x ceil((end - begin) / stride) on both sides where end > begin, else begin:
// P >= end, so the last windows ONNX computes see its zeros, and P - begin a whole number of
// strides, so the windows the extra padding adds before ONNX's first are dropped whole, as are
// those past ONNX's last (a crop, cropImage). Equal pads need no crop.
struct ConvAxis {
    std::int64_t pad = 0;
    AxisCrop crop;
};

ConvAxis convAxis(OnnxCompiler& c, const OnnxNode& node, std::int64_t in, std::int64_t kernel, std::int64_t stride,
                  std::int64_t dilation, AxisPads pads)
{
    const std::int64_t span = dilation * (kernel - 1) + 1;
    const std::int64_t room = in + pads.begin + pads.end - span;
    if (room < 0)
        c.refuse(node, "the kernel's span of " + std::to_string(span) + " pixels is larger than the padded image (" +
                           std::to_string(in) + " pixels, padded " + std::to_string(pads.begin) + " and " +
                           std::to_string(pads.end) + ")");
    ConvAxis axis;
    const std::int64_t extra = std::max<std::int64_t>(0, pads.end - pads.begin);
    axis.pad = pads.begin + (extra + stride - 1) / stride * stride;
    axis.crop.skip = (axis.pad - pads.begin) / stride;
    axis.crop.kept = room / stride + 1;
    axis.crop.computed = slidingOutput(in, kernel, stride, axis.pad, dilation);
    MANTISSA_ASSERT(axis.crop.computed >= axis.crop.skip + axis.crop.kept);
    return axis;
}

void compileConv(OnnxCompiler& c, const OnnxNode& original)
{
    const ImageNode in = imageNode(c, original);
    const OnnxNode& node = in.node;
    const Shape& image = in.image;
    const ConvWeight weight = convWeight(c, in, ConvDirection::Forward);
    const std::vector<std::int64_t>& kernel = weight.kernel;
    const std::vector<std::int64_t> stride = perAxis(c, node, "strides", 1);
    const std::vector<std::int64_t> dilation = perAxis(c, node, "dilations", 1);
    const std::vector<AxisPads> pads = windowPads(c, node, image, kernel, stride, dilation);
    const ConvAxis h = convAxis(c, node, image[1], kernel[0], stride[0], dilation[0], pads[0]);
    const ConvAxis w = convAxis(c, node, image[2], kernel[1], stride[1], dilation[1], pads[1]);

    ConvGeometry g;
    g.inChannels = image[0];
    g.inH = image[1];
    g.inW = image[2];
    g.outChannels = weight.dims[0];
    g.kH = kernel[0];
    g.kW = kernel[1];
    g.strideH = stride[0];
    g.strideW = stride[1];
    g.padH = h.pad;
    g.padW = w.pad;
    g.dilationH = dilation[0];
    g.dilationW = dilation[1];
    g.groups = weight.groups;
    g.outH = h.crop.computed;
    g.outW = w.crop.computed;
    ConvInitializers initializers = convInitializers(c, node, weight, g.outChannels);
    const ValueId computed = appendImageLayer(c, in, std::make_unique<Conv2d>(g, initializers.hasBias, "", false),
                                              std::move(initializers.tensors));
    bindImage(c, in, cropImage(c, node, computed, {h.crop, w.crop}));
}

// The running statistics are buffers loaded from the file. ONNX's momentum keeps that much of
// the running value (running = running x momentum + batch x (1 - momentum)); the engine's, as
// PyTorch's, is the share of the batch, so it is 1 - ONNX's. Training normalises with the
// batch's statistics, evaluation with the running ones, as PyTorch does, which is what a file
// exported for training (training_mode = 1, or three or more outputs before opset 14) says. A
// file exported for inference compiles to the same layer: trained, it learns as PyTorch would.
void compileBatchNormalization(OnnxCompiler& c, const OnnxNode& node)
{
    const ValueId input = c.activation(node, 0);
    const Shape& shape = c.shapeOf(input);
    if (shape.rank() != 1 && shape.rank() != 3)
        c.refuse(node, "only [N, C] and [N, C, H, W] compile, got " + shape.toString() + " per sample");
    const std::int64_t channels = shape[0];
    const auto channelVector = [&](const OnnxTensor& t, const char* role) {
        if (t.shape != std::vector<std::int64_t>{channels})
            c.refuse(node, std::string(role) + " " + joined(t.shape) + " must be [" + std::to_string(channels) + "]");
        return &t;
    };
    const OnnxTensor* scale = channelVector(c.parameter(node, 1), "scale");
    const OnnxTensor* bias = channelVector(c.parameter(node, 2), "B");
    std::vector<const OnnxTensor*> statistics;
    for (std::size_t k : {std::size_t{3}, std::size_t{4}}) {
        const OnnxTensor* running = k < node.inputs.size() ? c.onnx().constant(node.inputs[k]) : nullptr;
        if (!running || running->floats.empty())
            c.refuse(node, std::string(k == 3 ? "input_mean" : "input_var") + " must be a float initializer");
        statistics.push_back(channelVector(*running, k == 3 ? "input_mean" : "input_var"));
    }
    if (node.attribute("spatial") && node.intAttribute("spatial", 1) != 1)
        c.refuse(node, "spatial = 0 (statistics per value, not per channel) does not compile");
    const float momentum = node.floatAttribute("momentum", 0.9f);
    const float epsilon = node.floatAttribute("epsilon", 1e-5f);
    if (!(momentum >= 0.0f && momentum <= 1.0f) || !(epsilon > 0.0f))
        c.refuse(node, "momentum must lie in [0, 1] and epsilon be positive");
    c.addLayer(node, std::make_unique<BatchNorm>(shape, 1.0f - momentum, epsilon), input, {scale, bias}, {},
               std::move(statistics));
}

// Padding one side more than the other (auto_pad SAME_* with an odd total, TensorFlow's SAME
// pools, explicit pads) is the engine's: its windows start at the padding before and run as far
// as ONNX's output extents reach (PoolGeometry).
void compilePool(OnnxCompiler& c, const OnnxNode& original, PoolKind kind)
{
    const ImageNode in = imageNode(c, original);
    const OnnxNode& node = in.node;
    const Shape& image = in.image;
    refuseExtraOutputs(c, node, "Indices");
    if (!node.attribute("kernel_shape"))
        c.refuse(node, "kernel_shape is missing");
    const std::vector<std::int64_t> kernel = perAxis(c, node, "kernel_shape", 1);
    const std::vector<std::int64_t> stride = perAxis(c, node, "strides", 1);
    const std::vector<std::int64_t> dilation = perAxis(c, node, "dilations", 1);
    if (dilation != std::vector<std::int64_t>{1, 1})
        c.refuse(node, "dilations " + joined(dilation) + " do not compile for pooling");
    const std::vector<AxisPads> pads = windowPads(c, node, image, kernel, stride, dilation);
    const std::vector<std::int64_t> out = windowOutput(c, node, image, kernel, stride, pads);
    PoolGeometry g;
    g.channels = image[0];
    g.inH = image[1];
    g.inW = image[2];
    g.kH = kernel[0];
    g.kW = kernel[1];
    g.strideH = stride[0];
    g.strideW = stride[1];
    g.padH = pads[0].begin;
    g.padW = pads[1].begin;
    g.outH = out[0];
    g.outW = out[1];
    g.countPadding = kind == PoolKind::Avg && node.intAttribute("count_include_pad", 0) != 0;
    bindImage(c, in, appendImageLayer(c, in, std::make_unique<Pool2d>(kind, g), {}));
}

void compileMaxPool(OnnxCompiler& c, const OnnxNode& node) { compilePool(c, node, PoolKind::Max); }
void compileAveragePool(OnnxCompiler& c, const OnnxNode& node) { compilePool(c, node, PoolKind::Avg); }

// One window over the whole image.
template <PoolKind Kind>
void compileGlobalPool(OnnxCompiler& c, const OnnxNode& node)
{
    const ImageNode in = imageNode(c, node);
    PoolGeometry g;
    g.channels = in.image[0];
    g.inH = g.kH = in.image[1];
    g.inW = g.kW = in.image[2];
    g.strideH = g.strideW = 1;
    g.outH = g.outW = 1;
    bindImage(c, in, appendImageLayer(c, in, std::make_unique<Pool2d>(Kind, g), {}));
}

// The ratio (an input from opset 12, an attribute before) and whether the file drops at all
// (training_mode, from opset 12; before, a Dropout dropped whenever the model trained). Where it
// does not, or drops nothing, it is the identity; else the engine's dropout, whose mask is its
// own draw (dropout.h), not the exporter's.
void compileDropout(OnnxCompiler& c, const OnnxNode& node)
{
    const ValueId input = c.activation(node, 0);
    refuseExtraOutputs(c, node, "mask");
    const bool asInputs = c.onnx().opsetVersion >= 12;
    const float ratio = asInputs ? constantScalar(c, node, 1).value_or(0.5f) : node.floatAttribute("ratio", 0.5f);
    const bool training = asInputs ? constantScalar(c, node, 2).value_or(0.0f) != 0.0f : true;
    if (!(ratio >= 0.0f && ratio < 1.0f))
        c.refuse(node, "ratio " + std::to_string(ratio) + " must lie in [0, 1)");
    // Elementwise: the output keeps the input's batch position (batch_layout.h).
    const BatchLayout layout = c.layout(node.inputs[0]);
    if (!training || ratio == 0.0f) {
        c.bind(node, 0, input, layout);
        return;
    }
    c.addLayer(node, std::make_unique<Dropout>(ratio, c.shapeOf(input).numel()), input, {}, layout);
}

void addPointwise(OnnxCompiler& c, const OnnxNode& node, PointwiseFunction function)
{
    const ValueId input = c.activation(node, 0);
    const DType type = c.policy().layer().compute();
    c.bind(node, 0, c.addOp(node, std::make_unique<PointwiseOp>(node.name, type, function), {input}),
           c.layout(node.inputs[0]));
}

// The bounds are constant inputs from opset 11 (each optional) and attributes before.
void compileClip(OnnxCompiler& c, const OnnxNode& node)
{
    constexpr float kUnbounded = std::numeric_limits<float>::infinity();
    const bool asInputs = c.onnx().opsetVersion >= 11;
    const float lo =
        asInputs ? constantScalar(c, node, 1).value_or(-kUnbounded) : node.floatAttribute("min", -kUnbounded);
    const float hi =
        asInputs ? constantScalar(c, node, 2).value_or(kUnbounded) : node.floatAttribute("max", kUnbounded);
    addPointwise(c, node, {PointwiseKind::Clip, lo, hi});
}

void compileLeakyRelu(OnnxCompiler& c, const OnnxNode& node)
{
    addPointwise(c, node, {PointwiseKind::LeakyRelu, node.floatAttribute("alpha", 0.01f), 0.0f});
}

void compileHardSigmoid(OnnxCompiler& c, const OnnxNode& node)
{
    addPointwise(c, node,
                 {PointwiseKind::HardSigmoid, node.floatAttribute("alpha", 0.2f), node.floatAttribute("beta", 0.5f)});
}

void compileHardSwish(OnnxCompiler& c, const OnnxNode& node)
{
    addPointwise(c, node, {PointwiseKind::HardSwish, 1.0f / 6.0f, 0.5f});
}

} // namespace

void addConvNodeCompilers(NodeCompilerTable& table)
{
    table["Conv"] = compileConv;
    table["BatchNormalization"] = compileBatchNormalization;
    table["MaxPool"] = compileMaxPool;
    table["AveragePool"] = compileAveragePool;
    table["GlobalAveragePool"] = compileGlobalPool<PoolKind::Avg>;
    table["GlobalMaxPool"] = compileGlobalPool<PoolKind::Max>;
    table["Dropout"] = compileDropout;
    table["Clip"] = compileClip;
    table["LeakyRelu"] = compileLeakyRelu;
    table["HardSigmoid"] = compileHardSigmoid;
    table["HardSwish"] = compileHardSwish;
}

} // namespace mantissa::onnx_import
