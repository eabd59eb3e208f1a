// The ops that change how values are laid out, not what they are: Reshape, Squeeze, Unsqueeze
// and Transpose (and Cast to float, which keeps the engine's values as they are). On a computed
// value each is a view where the batch-first order of the values does not change
// (reshape_op.h) and a move otherwise: an exchange of two groups of axes on the backend
// (swap_axes_op.h), any other permutation by an index map (index_map_op.h); the batch's place (batch_layout.h)
// follows it. On a trainable initializer it makes a view of the initializer (ParameterView)
// that the op reading it (a linear layer, an addition) computes with directly.
#include "engine/onnx/index_map_op.h"
#include "engine/onnx/reshape_op.h"
#include "engine/onnx/swap_axes_op.h"
#include "engine/onnx/tensor_node_families.h"
#include "engine/util/check.h"

#include <algorithm>
#include <numeric>
#include <optional>

namespace mantissa::onnx_import {

namespace {

// A per-sample permutation that exchanges two adjacent groups of axes: the extents of the
// values before, the two groups and after ([outer, rows, cols, inner] to [outer, cols, rows,
// inner]). `moved` lists the input's axes of more than one value in output order.
struct BlockSwap {
    std::int64_t outer = 1, rows = 1, cols = 1, inner = 1;
};

std::optional<BlockSwap> blockSwap(const std::vector<std::size_t>& moved, const std::vector<std::int64_t>& extents)
{
    std::vector<std::size_t> sorted = moved;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t n = sorted.size();
    const auto extent = [&](std::size_t from, std::size_t to) {
        std::int64_t product = 1;
        for (std::size_t i = from; i < to; ++i)
            product *= extents[sorted[i]];
        return product;
    };
    for (std::size_t p = 0; p < n; ++p)
        for (std::size_t q = p + 1; q < n; ++q)
            for (std::size_t r = q + 1; r <= n; ++r) {
                std::vector<std::size_t> swapped(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(p));
                swapped.insert(swapped.end(), sorted.begin() + static_cast<std::ptrdiff_t>(q),
                               sorted.begin() + static_cast<std::ptrdiff_t>(r));
                swapped.insert(swapped.end(), sorted.begin() + static_cast<std::ptrdiff_t>(p),
                               sorted.begin() + static_cast<std::ptrdiff_t>(q));
                swapped.insert(swapped.end(), sorted.begin() + static_cast<std::ptrdiff_t>(r), sorted.end());
                if (swapped == moved)
                    return BlockSwap{extent(0, p), extent(p, q), extent(q, r), extent(r, n)};
            }
    return std::nullopt;
}

// Reshape, Squeeze, Unsqueeze: the same values in ONNX's order under the output's shape.
void compileView(OnnxCompiler& c, const OnnxNode& node)
{
    const std::string& output = node.outputs.at(0);
    if (const std::optional<ParameterView> view = c.parameterView(node, 0)) {
        if (view->transposed || view->overBatch)
            c.refuse(node, "reshaping a transposed or expanded initializer does not compile");
        c.bindParameterView(output, {view->tensor, c.dims(output), false});
        return;
    }
    const ValueId input = c.activation(node, 0);
    const std::string& name = node.inputs[0];
    const std::int64_t before = elementsBeforeBatch(c.dims(name), c.layout(name), c.batch());
    const std::optional<BatchLayout> layout = reshapedLayout(before, c.dims(output), c.batch());
    if (!layout)
        c.refuse(node, "the new shape " + Shape(c.dims(output)).toString() +
                           " mixes the batch with other values of each sample");
    const Shape perSample = perSampleShape(c.dims(output), *layout, c.batch());
    c.bind(
        node, 0,
        c.addOp(node, std::make_unique<ReshapeOp>(node.name, c.dtypeOf(input), c.shapeOf(input), perSample), {input}),
        *layout);
}

void compileTranspose(OnnxCompiler& c, const OnnxNode& node)
{
    const std::string& output = node.outputs.at(0);
    const std::vector<std::int64_t>& outDims = c.dims(output);
    std::vector<std::int64_t> perm = node.intsAttribute("perm");
    if (perm.empty()) { // ONNX's default reverses the axes
        perm.resize(outDims.size());
        std::iota(perm.rbegin(), perm.rend(), 0);
    }
    if (perm.size() != outDims.size())
        c.refuse(node,
                 "perm names " + std::to_string(perm.size()) + " axes of a value of " + std::to_string(outDims.size()));
    if (const std::optional<ParameterView> view = c.parameterView(node, 0)) {
        if (perm != std::vector<std::int64_t>{1, 0} || view->overBatch)
            c.refuse(node, "only a 2-D initializer's transpose compiles (a linear layer's weight)");
        c.bindParameterView(output, {view->tensor, outDims, !view->transposed});
        return;
    }
    const ValueId input = c.activation(node, 0);
    const std::string& name = node.inputs[0];
    const BatchLayout in = c.layout(name);
    // Output axis i is input axis perm[i]; the batch's axis keeps its split into outer and inner.
    std::optional<BatchLayout> out;
    std::vector<std::size_t> expandedPerm; // output expanded axis -> input expanded axis
    for (std::size_t i = 0; i < perm.size(); ++i) {
        const std::size_t source = normalisedAxis(c, node, perm[i], perm.size());
        if (source == in.axis) {
            out = BatchLayout{i, in.outer};
            expandedPerm.push_back(source);
            expandedPerm.push_back(source + 1);
        } else {
            expandedPerm.push_back(source < in.axis ? source : source + 1);
        }
    }
    MANTISSA_ASSERT(out.has_value());
    const std::vector<std::int64_t> inExpanded = expandedOf(c, name);
    const Shape perSample = perSampleShape(outDims, *out, c.batch());
    // Where the axes of more than one value keep their order, the values do too: a view.
    std::vector<std::size_t> moved;
    for (std::size_t axis : expandedPerm)
        if (inExpanded[axis] != 1)
            moved.push_back(axis);
    const DType type = c.dtypeOf(input);
    if (std::is_sorted(moved.begin(), moved.end())) {
        c.bind(node, 0,
               c.addOp(node, std::make_unique<ReshapeOp>(node.name, type, c.shapeOf(input), perSample), {input}), *out);
        return;
    }
    if (const std::optional<BlockSwap> swap = blockSwap(moved, inExpanded)) {
        c.bind(node, 0,
               c.addOp(node,
                       std::make_unique<SwapAxesOp>(node.name, type, swap->outer, swap->rows, swap->cols, swap->inner,
                                                    c.shapeOf(input), perSample),
                       {input}),
               *out);
        return;
    }
    std::vector<std::int64_t> outExpanded;
    for (std::size_t axis : expandedPerm)
        outExpanded.push_back(inExpanded[axis]);
    const std::vector<std::int64_t> strides = rowMajorStrides(inExpanded);
    std::vector<ElementSource> map;
    map.reserve(static_cast<std::size_t>(perSample.numel()));
    forEachIndex(outExpanded, [&](const std::vector<std::int64_t>& index) {
        std::int64_t offset = 0;
        for (std::size_t j = 0; j < index.size(); ++j)
            offset += index[j] * strides[expandedPerm[j]];
        map.push_back({0, offset});
    });
    c.bind(node, 0,
           c.addOp(node,
                   std::make_unique<IndexMapOp>(node.name, type, std::vector<Shape>{c.shapeOf(input)}, perSample,
                                                std::move(map)),
                   {input}),
           *out);
}

// The engine keeps float values in the policy's dtypes whatever ONNX's float type, so a cast to
// float or double leaves them as they are; a cast to a 16-bit float would round and is refused,
// and a cast to an integer or Boolean is shape arithmetic or a mask the import folds.
void compileCast(OnnxCompiler& c, const OnnxNode& node)
{
    const auto to = static_cast<ElementType>(node.intAttribute("to", 0));
    if ((to != ElementType::Float32 && to != ElementType::Float64) || !isFloatValue(c, node.inputs.at(0)))
        c.refuse(node, std::string("only a cast of a computed float value to float or double compiles, not to ") +
                           elementTypeName(to) + " (which would round)");
    const ValueId input = c.activation(node, 0);
    c.bind(node, 0, input, c.layout(node.inputs[0]));
}

} // namespace

void addLayoutNodeCompilers(NodeCompilerTable& table)
{
    table["Reshape"] = compileView;
    table["Squeeze"] = compileView;
    table["Unsqueeze"] = compileView;
    table["Transpose"] = compileTranspose;
    table["Cast"] = compileCast;
}

} // namespace mantissa::onnx_import
