#include "engine/onnx/conv_windows.h"

#include "engine/onnx/index_map_op.h"
#include "engine/onnx/reshape_op.h"

#include <algorithm>

namespace mantissa::onnx_import {

std::string joined(const std::vector<std::int64_t>& values)
{
    std::string text = "[";
    for (std::size_t i = 0; i < values.size(); ++i)
        text += (i ? ", " : "") + std::to_string(values[i]);
    return text + "]";
}

std::vector<std::int64_t> perAxis(OnnxCompiler& c, const OnnxNode& node, const std::string& name, std::int64_t fallback,
                                  std::int64_t least)
{
    if (!node.attribute(name))
        return {fallback, fallback};
    std::vector<std::int64_t> values = node.intsAttribute(name);
    if (values.size() != 2)
        c.refuse(node, name + " " + joined(values) + " must have one value per axis of a 2-D image");
    for (std::int64_t v : values)
        if (v < least)
            c.refuse(node, name + " " + joined(values) + (least == 1 ? " must be positive" : " must not be negative"));
    return values;
}

namespace {

// The 2-D form of a 1-D node's per-axis attribute: `leading` for the new axis before each of
// its `groupsOf` runs (pads hold a begin run and an end run). A count that does not fit 1-D is
// refused.
void lineAttributeAsImage(OnnxCompiler& c, const OnnxNode& node, OnnxAttribute& attribute, std::int64_t leading,
                          std::size_t runs)
{
    std::vector<std::int64_t>& v = attribute.ints;
    if (attribute.kind != OnnxAttribute::Kind::Ints || v.size() != runs)
        c.refuse(node, attribute.name + " " + joined(v) + " must have " + (runs == 1 ? "one value" : "two values") +
                           " for a 1-D image");
    std::vector<std::int64_t> image;
    for (std::int64_t value : v) {
        image.push_back(leading);
        image.push_back(value);
    }
    v = image;
}

} // namespace

ImageNode imageNode(OnnxCompiler& c, const OnnxNode& node)
{
    ImageNode image;
    image.node = node;
    image.input = c.activation(node, 0);
    const Shape& shape = c.shapeOf(image.input);
    if (shape.rank() == 4)
        c.refuse(node, "3-D images (N, C, D, H, W) do not compile: the engine has no 3-D convolution or pooling, got " +
                           shape.toString() + " per sample");
    if (shape.rank() != 2 && shape.rank() != 3)
        c.refuse(node,
                 "only 1-D (N, C, L) and 2-D (N, C, H, W) images compile, got " + shape.toString() + " per sample");
    image.line = shape.rank() == 2;
    image.image = image.line ? Shape{shape[0], 1, shape[1]} : shape;
    if (!image.line)
        return image;
    for (OnnxAttribute& attribute : image.node.attributes) {
        const std::string& name = attribute.name;
        if (name == "kernel_shape" || name == "strides" || name == "dilations")
            lineAttributeAsImage(c, node, attribute, 1, 1);
        else if (name == "pads")
            lineAttributeAsImage(c, node, attribute, 0, 2);
        else if (name == "output_padding")
            lineAttributeAsImage(c, node, attribute, 0, 1);
        else if (name == "output_shape") // [L], or [N, C, L]
            attribute.ints.insert(attribute.ints.end() - std::min<std::ptrdiff_t>(1, std::ssize(attribute.ints)), 1);
    }
    return image;
}

ValueId appendImageLayer(OnnxCompiler& c, const ImageNode& image, LayerPtr layer,
                         std::vector<const OnnxTensor*> initializers)
{
    return c.appendLayer(image.node, std::move(layer), image.input, std::move(initializers), {},
                         image.line ? std::optional<Shape>(image.image) : std::nullopt);
}

void bindImage(OnnxCompiler& c, const ImageNode& image, ValueId value)
{
    if (image.line) {
        const Shape& computed = c.shapeOf(value);
        value = c.appendToGroup(std::make_unique<ReshapeOp>(image.node.name + ".line", c.dtypeOf(value), computed,
                                                            Shape{computed[0], computed[2]}),
                                {value});
    }
    c.bind(image.node, 0, value);
}

ConvInitializers convInitializers(OnnxCompiler& c, const OnnxNode& node, const ConvWeight& weight,
                                  std::int64_t outputChannels)
{
    ConvInitializers out{{weight.tensor}, node.inputs.size() > 2 && !node.inputs[2].empty()};
    if (out.hasBias) {
        const OnnxTensor& bias = c.parameter(node, 2);
        if (bias.shape != std::vector<std::int64_t>{outputChannels})
            c.refuse(node, "B " + joined(bias.shape) + " must be [" + std::to_string(outputChannels) + "]");
        out.tensors.push_back(&bias);
    }
    return out;
}

ConvWeight convWeight(OnnxCompiler& c, const ImageNode& image, ConvDirection direction)
{
    const OnnxNode& node = image.node;
    ConvWeight weight;
    weight.tensor = &c.parameter(node, 1);
    weight.dims = weight.tensor->shape;
    if (image.line && weight.dims.size() == 3)
        weight.dims.insert(weight.dims.begin() + 2, 1);
    weight.groups = node.intAttribute("group", 1);
    const std::int64_t channels = image.image[0], groups = weight.groups;
    if (groups < 1 || channels % groups != 0)
        c.refuse(node, "group " + std::to_string(groups) + " does not divide the " + std::to_string(channels) +
                           " input channels");
    const std::string kernelAxes = image.line ? "k" : "kH, kW";
    const std::vector<std::int64_t>& w = weight.dims;
    if (direction == ConvDirection::Forward) {
        if (w.size() != 4 || w[1] != channels / groups || w[0] % groups != 0)
            c.refuse(node, "W " + joined(weight.tensor->shape) + " must be [filters, " +
                               std::to_string(channels / groups) + ", " + kernelAxes +
                               "] with filters a multiple of the group " + std::to_string(groups));
    } else if (w.size() != 4 || w[0] != channels) {
        c.refuse(node, "W " + joined(weight.tensor->shape) + " must be [" + std::to_string(channels) +
                           ", out channels / group, " + kernelAxes + "]");
    }
    weight.kernel = {w[2], w[3]};
    if (node.attribute("kernel_shape") && node.intsAttribute("kernel_shape") != weight.kernel)
        c.refuse(node, "kernel_shape " + joined(node.intsAttribute("kernel_shape")) + " differs from W's " +
                           joined(weight.kernel));
    return weight;
}

std::vector<AxisPads> windowPads(OnnxCompiler& c, const OnnxNode& node, const Shape& image,
                                 const std::vector<std::int64_t>& kernel, const std::vector<std::int64_t>& stride,
                                 const std::vector<std::int64_t>& dilation)
{
    const std::string autoPad = node.stringAttribute("auto_pad", "NOTSET");
    if (autoPad == "VALID")
        return {{}, {}};
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
        std::vector<AxisPads> pads(2);
        for (std::size_t a = 0; a < 2; ++a) {
            const std::int64_t in = image[a + 1];
            const std::int64_t out = (in + stride[a] - 1) / stride[a];
            const std::int64_t total =
                std::max<std::int64_t>(0, (out - 1) * stride[a] + dilation[a] * (kernel[a] - 1) + 1 - in);
            const std::int64_t smaller = total / 2;
            pads[a] = autoPad == "SAME_UPPER" ? AxisPads{smaller, total - smaller} : AxisPads{total - smaller, smaller};
        }
        return pads;
    }
    if (autoPad != "NOTSET")
        c.refuse(node, "auto_pad '" + autoPad + "' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER");
    if (!node.attribute("pads"))
        return {{}, {}};
    const std::vector<std::int64_t> pads = node.intsAttribute("pads");
    if (pads.size() != 4)
        c.refuse(node, "pads " + joined(pads) + " must have four values (begin and end of H and W)");
    if (std::any_of(pads.begin(), pads.end(), [](std::int64_t p) { return p < 0; }))
        c.refuse(node, "pads " + joined(pads) + " must not be negative");
    return {{pads[0], pads[2]}, {pads[1], pads[3]}};
}

ValueId cropImage(OnnxCompiler& c, const OnnxNode& node, ValueId value, const std::vector<AxisCrop>& crops)
{
    if (crops[0].none() && crops[1].none())
        return value;
    const Shape& computed = c.shapeOf(value);
    const std::int64_t channels = computed[0];
    std::vector<ElementSource> map;
    map.reserve(static_cast<std::size_t>(channels * crops[0].kept * crops[1].kept));
    for (std::int64_t ch = 0; ch < channels; ++ch)
        for (std::int64_t i = 0; i < crops[0].kept; ++i)
            for (std::int64_t j = 0; j < crops[1].kept; ++j)
                map.push_back(
                    {0, (ch * crops[0].computed + i + crops[0].skip) * crops[1].computed + j + crops[1].skip});
    const Shape kept{channels, crops[0].kept, crops[1].kept};
    return c.appendToGroup(std::make_unique<IndexMapOp>(node.name + ".crop", c.dtypeOf(value),
                                                        std::vector<Shape>{computed}, kept, std::move(map)),
                           {value});
}

} // namespace mantissa::onnx_import
