// Gather, Slice, Split, Concat and Expand. Gather of a trainable table by the graph's integer
// input is a token embedding (the ids reach the graph as floats holding whole numbers, as the
// engine's own token embedding reads them); Gather of all a table's rows in order (a positional
// table indexed by 0..T-1, which the import folded) is the table itself. The rest select or
// repeat elements of computed values by a map built here (index_map_op.h), never across the
// batch's axis.
#include "engine/model/layers/token_embedding.h"
#include "engine/onnx/index_map_op.h"
#include "engine/onnx/parameter_holder.h"
#include "engine/onnx/tensor_node_families.h"
#include "engine/util/check.h"

#include <algorithm>

namespace mantissa::onnx_import {

namespace {

ValueId addIndexMap(OnnxCompiler& c, const OnnxNode& node, std::size_t output, const std::vector<ValueId>& inputs,
                    const BatchLayout& layout, std::vector<ElementSource> map, std::vector<Parameter*> parameters = {})
{
    std::vector<Shape> shapes;
    for (ValueId v : inputs)
        shapes.push_back(c.shapeOf(v));
    const std::string& name = node.outputs.at(output);
    Shape perSample;
    try {
        perSample = perSampleShape(c.dims(name), layout, c.batch());
    } catch (const ConfigError& e) {
        c.refuse(node, e.what());
    }
    MANTISSA_ASSERT(perSample.numel() == static_cast<std::int64_t>(map.size()));
    const ValueId value = c.addOp(node,
                                  std::make_unique<IndexMapOp>(node.name, c.dtypeOf(inputs.at(0)), shapes, perSample,
                                                               std::move(map), std::move(parameters)),
                                  inputs);
    c.bind(node, output, value, layout);
    return value;
}

void compileEmbedding(OnnxCompiler& c, const OnnxNode& node, const ParameterView& table)
{
    const std::string& ids = node.inputs[1];
    const OnnxValue* value = c.onnx().value(ids);
    if (!value || isFloatingPoint(value->type))
        c.refuse(node, "an embedding's indices must be integers");
    if (table.transposed || table.overBatch || table.dims.size() != 2 || node.intAttribute("axis", 0) != 0)
        c.refuse(node, "only rows of a [vocabulary, width] table compile as an embedding");
    const ValueId input = c.activation(node, 1);
    if (c.shapeOf(input).rank() != 1 || !c.layout(ids).batchFirst())
        c.refuse(node, "an embedding reads token ids of [batch, tokens]");
    c.claim(node, *table.tensor);
    auto embedding = std::make_unique<TokenEmbedding>(table.dims[0], table.dims[1], "");
    c.setEmbedding(table.tensor->name, embedding.get());
    c.addLayer(node, std::move(embedding), input, {table.tensor});
}

void compileGather(OnnxCompiler& c, const OnnxNode& node)
{
    if (node.inputs.size() != 2)
        c.refuse(node, "it takes two inputs");
    if (const std::optional<ParameterView> table = c.parameterView(node, 0)) {
        if (c.isActivation(node, 1))
            return compileEmbedding(c, node, *table);
        // All rows in order: the table itself under the output's shape.
        const std::vector<std::int64_t> indices = constantInts(c, node, 1);
        bool identity = !table->transposed && !table->overBatch && node.intAttribute("axis", 0) == 0 &&
                        !table->dims.empty() && static_cast<std::int64_t>(indices.size()) == table->dims[0];
        for (std::size_t i = 0; identity && i < indices.size(); ++i)
            identity = indices[i] == static_cast<std::int64_t>(i);
        if (!identity)
            c.refuse(node, "gathering other than all of an initializer's rows in order does not compile");
        c.bindParameterView(node.outputs.at(0), {table->tensor, c.dims(node.outputs[0]), false});
        return;
    }
    // A computed value at constant indices along one axis.
    const ValueId input = c.activation(node, 0);
    const std::string& name = node.inputs[0];
    const OnnxTensor* indexTensor = c.constant(node, 1);
    if (!indexTensor)
        c.refuse(node, "only constant indices into a computed value compile");
    const std::vector<std::int64_t> indices = constantInts(c, node, 1);
    const std::vector<std::int64_t>& inDims = c.dims(name);
    const BatchLayout in = c.layout(name);
    const std::size_t axis = normalisedAxis(c, node, node.intAttribute("axis", 0), inDims.size());
    const std::size_t e = expandedAxis(c, node, in, axis);
    const std::vector<std::int64_t> inExpanded = expandedOf(c, name);
    // The indices' axes replace `axis`; the batch's axis moves by their count less one.
    const std::size_t indexRank = indexTensor->shape.size();
    BatchLayout out = in;
    if (axis < in.axis)
        out.axis = in.axis + indexRank - 1;
    std::vector<std::int64_t> outExpanded(inExpanded.begin(), inExpanded.begin() + static_cast<std::ptrdiff_t>(e));
    outExpanded.insert(outExpanded.end(), indexTensor->shape.begin(), indexTensor->shape.end());
    outExpanded.insert(outExpanded.end(), inExpanded.begin() + static_cast<std::ptrdiff_t>(e) + 1, inExpanded.end());
    const std::vector<std::int64_t> strides = rowMajorStrides(inExpanded);
    std::vector<ElementSource> map;
    forEachIndex(outExpanded, [&](const std::vector<std::int64_t>& index) {
        std::int64_t flat = 0; // which index of the indices tensor
        for (std::size_t j = 0; j < indexRank; ++j)
            flat = flat * indexTensor->shape[j] + index[e + j];
        std::int64_t at = indices[static_cast<std::size_t>(flat)];
        if (at < 0)
            at += inExpanded[e];
        if (at < 0 || at >= inExpanded[e])
            c.refuse(node, "index " + std::to_string(indices[static_cast<std::size_t>(flat)]) +
                               " is outside an axis of " + std::to_string(inExpanded[e]));
        std::int64_t offset = at * strides[e];
        for (std::size_t j = 0; j < e; ++j)
            offset += index[j] * strides[j];
        for (std::size_t j = e + 1; j < inExpanded.size(); ++j)
            offset += index[j + indexRank - 1] * strides[j];
        map.push_back({0, offset});
    });
    addIndexMap(c, node, 0, {input}, out, std::move(map));
}

// The elements [start, end) by step along some axes, for Slice and each output of Split.
std::vector<ElementSource> sliceMap(const std::vector<std::int64_t>& inExpanded, const std::vector<std::int64_t>& start,
                                    const std::vector<std::int64_t>& step, const std::vector<std::int64_t>& outExpanded)
{
    const std::vector<std::int64_t> strides = rowMajorStrides(inExpanded);
    std::vector<ElementSource> map;
    forEachIndex(outExpanded, [&](const std::vector<std::int64_t>& index) {
        std::int64_t offset = 0;
        for (std::size_t j = 0; j < index.size(); ++j)
            offset += (start[j] + index[j] * step[j]) * strides[j];
        map.push_back({0, offset});
    });
    return map;
}

void compileSlice(OnnxCompiler& c, const OnnxNode& node)
{
    const ValueId input = c.activation(node, 0);
    const std::string& name = node.inputs[0];
    const std::vector<std::int64_t>& inDims = c.dims(name);
    const BatchLayout layout = c.layout(name);
    const std::vector<std::int64_t> starts = constantInts(c, node, 1), ends = constantInts(c, node, 2);
    std::vector<std::int64_t> axes, steps;
    if (node.inputs.size() > 3 && !node.inputs[3].empty())
        axes = constantInts(c, node, 3);
    else
        for (std::size_t i = 0; i < starts.size(); ++i)
            axes.push_back(static_cast<std::int64_t>(i));
    if (node.inputs.size() > 4 && !node.inputs[4].empty())
        steps = constantInts(c, node, 4);
    else
        steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
        c.refuse(node, "its starts, ends, axes and steps differ in length");
    const std::vector<std::int64_t> inExpanded = expandedOf(c, name);
    std::vector<std::int64_t> start(inExpanded.size(), 0), step(inExpanded.size(), 1);
    std::vector<std::int64_t> outExpanded = inExpanded;
    for (std::size_t i = 0; i < axes.size(); ++i) {
        const std::size_t axis = normalisedAxis(c, node, axes[i], inDims.size());
        const std::size_t e = expandedAxis(c, node, layout, axis);
        const std::int64_t size = inExpanded[e];
        if (steps[i] == 0)
            c.refuse(node, "a step of 0");
        // ONNX's clamping: negative counts from the end; the ends clamp to the axis (or -1 with a
        // negative step, so that the first element can be included).
        auto clampIndex = [&](std::int64_t v, bool isEnd) {
            if (v < 0)
                v += size;
            const std::int64_t low = steps[i] > 0 ? 0 : -1;
            const std::int64_t high = steps[i] > 0 ? size : size - 1;
            return std::clamp(v, isEnd ? low : std::max<std::int64_t>(low, 0), high);
        };
        const std::int64_t first = clampIndex(starts[i], false), last = clampIndex(ends[i], true);
        const std::int64_t count = steps[i] > 0 ? std::max<std::int64_t>(0, (last - first + steps[i] - 1) / steps[i])
                                                : std::max<std::int64_t>(0, (first - last - steps[i] - 1) / -steps[i]);
        start[e] = first;
        step[e] = steps[i];
        outExpanded[e] = count;
    }
    addIndexMap(c, node, 0, {input}, layout, sliceMap(inExpanded, start, step, outExpanded));
}

void compileSplit(OnnxCompiler& c, const OnnxNode& node)
{
    const ValueId input = c.activation(node, 0);
    const std::string& name = node.inputs[0];
    const BatchLayout layout = c.layout(name);
    const std::size_t axis = normalisedAxis(c, node, node.intAttribute("axis", 0), c.dims(name).size());
    const std::size_t e = expandedAxis(c, node, layout, axis);
    const std::vector<std::int64_t> inExpanded = expandedOf(c, name);
    std::int64_t offset = 0;
    for (std::size_t k = 0; k < node.outputs.size(); ++k) {
        if (node.outputs[k].empty())
            continue;
        std::vector<std::int64_t> outExpanded = inExpanded;
        outExpanded[e] = c.dims(node.outputs[k])[axis];
        std::vector<std::int64_t> start(inExpanded.size(), 0), step(inExpanded.size(), 1);
        start[e] = offset;
        offset += outExpanded[e];
        addIndexMap(c, node, k, {input}, layout, sliceMap(inExpanded, start, step, outExpanded));
    }
}

// Computed values, and initializers repeated over the batch (a class token before the patches).
void compileConcat(OnnxCompiler& c, const OnnxNode& node)
{
    std::vector<ValueId> inputs;
    const auto computed = std::find_if(node.inputs.begin(), node.inputs.end(),
                                       [&](const std::string& name) { return c.find(name) != nullptr; });
    if (computed == node.inputs.end())
        c.refuse(node, "none of its inputs is computed by an earlier node");
    const BatchLayout layout = c.layout(*computed);
    const std::size_t axis = normalisedAxis(c, node, node.intAttribute("axis", 0), c.dims(*computed).size());
    const std::size_t e = expandedAxis(c, node, layout, axis);
    // Per operand in the node's order: its expanded shape and where its source index points.
    std::vector<std::vector<std::int64_t>> expanded;
    std::vector<std::uint32_t> sourceOf;
    std::vector<std::size_t> parameterOperands;
    std::vector<const OnnxTensor*> initializers;
    std::vector<Shape> parameterShapes;
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
        if (const std::optional<ParameterView> view = c.parameterView(node, i); view && view->overBatch) {
            if (!layout.batchFirst())
                c.refuse(node, "an initializer repeated over the batch joins only batch-first values");
            std::vector<std::int64_t> own{1, 1}; // outer and inner of the batch's axis, then the rest
            own.insert(own.end(), view->dims.begin() + 1, view->dims.end());
            expanded.push_back(own);
            c.claim(node, *view->tensor);
            parameterOperands.push_back(i);
            initializers.push_back(view->tensor);
            parameterShapes.push_back(Shape(view->tensor->shape));
            sourceOf.push_back(0); // set below, once the computed inputs are counted
            continue;
        }
        inputs.push_back(c.activation(node, i));
        if (!(c.layout(node.inputs[i]) == layout))
            c.refuse(node, "its inputs hold the batch in different places");
        expanded.push_back(expandedOf(c, node.inputs[i]));
        sourceOf.push_back(static_cast<std::uint32_t>(inputs.size() - 1));
    }
    for (std::size_t p = 0; p < parameterOperands.size(); ++p)
        sourceOf[parameterOperands[p]] = static_cast<std::uint32_t>(inputs.size() + p);
    std::vector<Parameter*> parameters;
    if (!parameterOperands.empty()) {
        auto* holder = static_cast<ParameterHolder*>(
            c.ownParameters(node, std::make_unique<ParameterHolder>(parameterShapes), initializers));
        for (std::size_t p = 0; p < parameterOperands.size(); ++p)
            parameters.push_back(holder->parameter(p));
    }
    std::vector<std::int64_t> outExpanded = expanded[0];
    outExpanded[e] = 0;
    for (const auto& dims : expanded)
        outExpanded[e] += dims[e];
    std::vector<std::vector<std::int64_t>> strides;
    for (const auto& dims : expanded)
        strides.push_back(rowMajorStrides(dims));
    std::vector<ElementSource> map;
    forEachIndex(outExpanded, [&](const std::vector<std::int64_t>& index) {
        std::size_t operand = 0;
        std::int64_t along = index[e];
        while (along >= expanded[operand][e])
            along -= expanded[operand++][e];
        std::int64_t offset = 0;
        for (std::size_t j = 0; j < index.size(); ++j)
            offset += (j == e ? along : index[j]) * strides[operand][j];
        map.push_back({sourceOf[operand], offset});
    });
    addIndexMap(c, node, 0, inputs, layout, std::move(map), std::move(parameters));
}

// An initializer of [1, ...] expanded to [batch, ...]: each sample reads the same values (a
// class token), which Concat takes as a parameter source.
void expandInitializer(OnnxCompiler& c, const OnnxNode& node, const ParameterView& view)
{
    const std::vector<std::int64_t>& outDims = c.dims(node.outputs.at(0));
    std::vector<std::int64_t> repeated = view.dims;
    if (!repeated.empty())
        repeated[0] = c.batch();
    if (view.transposed || view.overBatch || view.dims.empty() || view.dims[0] != 1 || repeated != outDims)
        c.refuse(node, "only an initializer of [1, ...] repeated over the batch compiles, not " +
                           Shape(view.dims).toString() + " to " + Shape(outDims).toString());
    ParameterView expanded = view;
    expanded.dims = outDims;
    expanded.overBatch = true;
    c.bindParameterView(node.outputs[0], expanded);
}

void compileExpand(OnnxCompiler& c, const OnnxNode& node)
{
    if (const std::optional<ParameterView> view = c.parameterView(node, 0))
        return expandInitializer(c, node, *view);
    const ValueId input = c.activation(node, 0);
    const std::string& name = node.inputs[0];
    const std::vector<std::int64_t>& outDims = c.dims(node.outputs.at(0));
    const BatchLayout in = c.layout(name);
    const BatchLayout out{in.axis + outDims.size() - c.dims(name).size(), in.outer};
    const std::vector<std::int64_t> inExpanded = expandedOf(c, name);
    std::vector<std::int64_t> outExpanded;
    try {
        outExpanded = expandedPerSample(outDims, out, c.batch());
    } catch (const ConfigError& e) {
        c.refuse(node, e.what());
    }
    const std::size_t shift = outExpanded.size() - inExpanded.size();
    const std::vector<std::int64_t> strides = rowMajorStrides(inExpanded);
    std::vector<ElementSource> map;
    forEachIndex(outExpanded, [&](const std::vector<std::int64_t>& index) {
        std::int64_t offset = 0;
        for (std::size_t j = 0; j < inExpanded.size(); ++j)
            offset += (inExpanded[j] == 1 ? 0 : index[j + shift]) * strides[j];
        map.push_back({0, offset});
    });
    addIndexMap(c, node, 0, {input}, out, std::move(map));
}

} // namespace

void addIndexNodeCompilers(NodeCompilerTable& table)
{
    table["Gather"] = compileGather;
    table["Slice"] = compileSlice;
    table["Split"] = compileSplit;
    table["Concat"] = compileConcat;
    table["Expand"] = compileExpand;
}

} // namespace mantissa::onnx_import
