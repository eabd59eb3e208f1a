#include "engine/onnx/conv_windows.h"

#include "engine/onnx/index_map_op.h"

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

const Shape& imageShape(OnnxCompiler& c, const OnnxNode& node, ValueId input)
{
    const Shape& shape = c.shapeOf(input);
    if (shape.rank() != 3)
        c.refuse(node, "only 2-D images (N, C, H, W) compile, got " + shape.toString() + " per sample");
    return shape;
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
