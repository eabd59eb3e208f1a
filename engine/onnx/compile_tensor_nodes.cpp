// The tensor and transformer op types: what GPT-style models and vision transformers export to
// besides Gemm and the activations, each family in a file of its own, and the helpers they share.
#include "engine/onnx/tensor_node_families.h"

#include "engine/util/check.h"

namespace mantissa::onnx_import {

void addTensorNodeCompilers(NodeCompilerTable& table)
{
    addArithmeticNodeCompilers(table);
    addMatMulNodeCompilers(table);
    addLayoutNodeCompilers(table);
    addIndexNodeCompilers(table);
    addNormalisationNodeCompilers(table);
}

std::size_t normalisedAxis(const OnnxCompiler& c, const OnnxNode& node, std::int64_t axis, std::size_t rank)
{
    const auto r = static_cast<std::int64_t>(rank);
    if (axis < -r || axis >= r)
        c.refuse(node, "axis " + std::to_string(axis) + " is outside a value of " + std::to_string(rank) + " axes");
    return static_cast<std::size_t>(axis < 0 ? axis + r : axis);
}

std::size_t expandedAxis(const OnnxCompiler& c, const OnnxNode& node, const BatchLayout& layout, std::size_t axis)
{
    if (axis == layout.axis)
        c.refuse(node, "it works along axis " + std::to_string(axis) +
                           ", which holds the batch: its values would mix samples, which does not compile");
    return axis < layout.axis ? axis : axis + 1;
}

std::vector<std::int64_t> expandedOf(const OnnxCompiler& c, const std::string& name)
{
    return expandedPerSample(c.dims(name), c.layout(name), c.batch());
}

std::vector<std::int64_t> constantInts(const OnnxCompiler& c, const OnnxNode& node, std::size_t input)
{
    const OnnxTensor* tensor = c.constant(node, input);
    if (!tensor)
        c.refuse(node, "input " + std::to_string(input) + " must be a constant (the import folds shape arithmetic)");
    if (!tensor->ints.empty() || tensor->floats.empty())
        return tensor->ints;
    c.refuse(node, "input " + std::to_string(input) + " must hold integers");
}

bool isFloatValue(const OnnxCompiler& c, const std::string& name)
{
    const OnnxValue* value = c.onnx().value(name);
    return value && isFloatingPoint(value->type);
}

} // namespace mantissa::onnx_import
