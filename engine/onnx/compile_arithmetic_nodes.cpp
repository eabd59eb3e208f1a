// Add, Sub, Mul, Div and Pow with numpy broadcasting, Sqrt and Erf, and Where (elementwise_op.h),
// whose condition must be a constant: the import folds the masks exporters build from shapes
// (Equal, Trilu, ...), and a condition computed from the data would need a comparison op. Two
// computed values of one shape and place of the batch add as the graph's AddOp, a skip
// connection's join; everything else is an ElementwiseOp over the output's expanded shape, whose
// operands may be computed values, constants or trainable initializers (a bias, a positional
// table), each broadcast from the right as numpy does. A constant or a parameter never spans the
// batch (its extent there is 1), so that samples stay apart.
#include "engine/model/graph/add_op.h"
#include "engine/onnx/elementwise_op.h"
#include "engine/onnx/index_map_op.h"
#include "engine/onnx/parameter_holder.h"
#include "engine/onnx/tensor_node_families.h"
#include "engine/util/check.h"

namespace mantissa::onnx_import {

namespace {

// The output's axes that operand axis k of a rank-`rank` operand lines up with, from the right.
std::size_t alignedAxis(std::size_t k, std::size_t rank, std::size_t outputRank) { return k + outputRank - rank; }

// An operand's strides over the output's expanded shape, from its own expanded shape `own`
// (rank `outputExpanded` or less, aligned from the right); 0 where it is broadcast.
std::vector<std::int64_t> broadcastStrides(const OnnxCompiler& c, const OnnxNode& node,
                                           const std::vector<std::int64_t>& own,
                                           const std::vector<std::int64_t>& outputExpanded)
{
    if (own.size() > outputExpanded.size())
        c.refuse(node, "an operand has more axes than the output");
    const std::vector<std::int64_t> contiguous = rowMajorStrides(own);
    std::vector<std::int64_t> strides(outputExpanded.size(), 0);
    for (std::size_t k = 0; k < own.size(); ++k) {
        const std::size_t axis = alignedAxis(k, own.size(), outputExpanded.size());
        if (own[k] == outputExpanded[axis])
            strides[axis] = own[k] == 1 ? 0 : contiguous[k];
        else if (own[k] != 1)
            c.refuse(node, "an operand of " + Shape(own).toString() + " does not broadcast to " +
                               Shape(outputExpanded).toString());
    }
    return strides;
}

// A constant's or parameter's ONNX shape as an expanded one: aligned to the output's axes, with
// the batch's axis split in two and required to be 1 there.
std::vector<std::int64_t> expandedUnbatched(const OnnxCompiler& c, const OnnxNode& node,
                                            const std::vector<std::int64_t>& dims, std::size_t outputRank,
                                            const BatchLayout& layout)
{
    if (dims.size() > outputRank)
        c.refuse(node, "an operand has more axes than the output");
    std::vector<std::int64_t> padded(outputRank - dims.size(), 1);
    padded.insert(padded.end(), dims.begin(), dims.end());
    if (padded[layout.axis] != 1)
        c.refuse(node, "a constant or initializer operand of " + Shape(dims).toString() +
                           " spans the batch's axis, which would give each sample other values");
    std::vector<std::int64_t> expanded(padded.begin(), padded.begin() + static_cast<std::ptrdiff_t>(layout.axis));
    expanded.push_back(1);
    expanded.insert(expanded.end(), padded.begin() + static_cast<std::ptrdiff_t>(layout.axis), padded.end());
    return expanded;
}

ElementwiseKind kindOf(const std::string& opType)
{
    if (opType == "Add")
        return ElementwiseKind::Add;
    if (opType == "Sub")
        return ElementwiseKind::Sub;
    if (opType == "Mul")
        return ElementwiseKind::Mul;
    if (opType == "Div")
        return ElementwiseKind::Div;
    if (opType == "Pow")
        return ElementwiseKind::Pow;
    if (opType == "Sqrt")
        return ElementwiseKind::Sqrt;
    if (opType == "Where")
        return ElementwiseKind::Where;
    MANTISSA_ASSERT(opType == "Erf");
    return ElementwiseKind::Erf;
}

void compileElementwise(OnnxCompiler& c, const OnnxNode& node)
{
    const ElementwiseKind kind = kindOf(node.opType);
    const std::size_t operandCount = elementwiseArity(kind);
    if (node.inputs.size() != operandCount)
        c.refuse(node, "it takes " + std::to_string(operandCount) + " inputs");
    const std::string& output = node.outputs.at(0);
    if (!isFloatValue(c, output))
        c.refuse(node, "only float arithmetic compiles; integer arithmetic is shape arithmetic the import folds");
    if (kind == ElementwiseKind::Where && !c.constant(node, 0))
        c.refuse(node, "its condition '" + node.inputs[0] +
                           "' is computed from the data; only a condition that is constant for the fixed input "
                           "shape compiles (a mask the import folds)");
    const std::vector<std::int64_t>& outDims = c.dims(output);

    // The batch lies where the computed operand of the output's rank (or the first) has it.
    std::optional<BatchLayout> layout;
    for (std::size_t i = 0; i < operandCount; ++i)
        if (c.isActivation(node, i)) {
            const BatchLayout own = c.layout(node.inputs[i]);
            const std::size_t shift = outDims.size() - c.dims(node.inputs[i]).size();
            const BatchLayout aligned{own.axis + shift, own.outer};
            if (layout && !(*layout == aligned))
                c.refuse(node, "its computed operands hold the batch in different places");
            layout = aligned;
        }
    if (!layout)
        c.refuse(node, "no operand is computed by an earlier node (the import folds constants)");

    // Two computed values of one shape and layout: the graph's AddOp, as a skip connection.
    if (kind == ElementwiseKind::Add && c.isActivation(node, 0) && c.isActivation(node, 1) &&
        c.dims(node.inputs[0]) == outDims && c.dims(node.inputs[1]) == outDims &&
        c.layout(node.inputs[0]) == c.layout(node.inputs[1])) {
        const ValueId a = c.activation(node, 0), b = c.activation(node, 1);
        c.bind(node, 0, c.addOp(node, std::make_unique<AddOp>(node.name, c.policy().layer().compute()), {a, b}),
               *layout);
        return;
    }

    std::vector<std::int64_t> outExpanded;
    try {
        outExpanded = expandedPerSample(outDims, *layout, c.batch());
    } catch (const ConfigError& e) {
        c.refuse(node, e.what());
    }
    std::vector<ElementwiseOperand> operands(operandCount);
    std::vector<ValueId> values;
    std::vector<Shape> valueShapes;
    std::vector<Shape> parameterShapes;
    std::vector<const OnnxTensor*> initializers;
    std::vector<std::size_t> parameterOperands;
    for (std::size_t i = 0; i < operandCount; ++i) {
        ElementwiseOperand& operand = operands[i];
        if (c.isActivation(node, i)) {
            const std::string& name = node.inputs[i];
            operand.source = ElementwiseOperand::Source::Value;
            const std::vector<std::int64_t> own = expandedOf(c, name);
            operand.strides = broadcastStrides(c, node, own, outExpanded);
            operand.elements = Shape(own).numel();
            values.push_back(c.activation(node, i));
            valueShapes.push_back(c.shapeOf(values.back()));
        } else if (const std::optional<ParameterView> view = c.parameterView(node, i)) {
            if (view->transposed || view->overBatch)
                c.refuse(node, "a transposed or expanded initializer as an elementwise operand does not compile");
            operand.source = ElementwiseOperand::Source::Parameter;
            const std::vector<std::int64_t> own = expandedUnbatched(c, node, view->dims, outDims.size(), *layout);
            operand.strides = broadcastStrides(c, node, own, outExpanded);
            operand.elements = view->tensor->elementCount();
            c.claim(node, *view->tensor);
            parameterShapes.push_back(Shape(view->tensor->shape));
            initializers.push_back(view->tensor);
            parameterOperands.push_back(i);
        } else if (const OnnxTensor* constant = c.constant(node, i)) {
            operand.source = ElementwiseOperand::Source::Constant;
            operand.constant = constant->floats.empty()
                                   ? std::vector<float>(constant->ints.begin(), constant->ints.end())
                                   : constant->floats;
            const std::vector<std::int64_t> own = expandedUnbatched(c, node, constant->shape, outDims.size(), *layout);
            operand.strides = broadcastStrides(c, node, own, outExpanded);
            operand.elements = constant->elementCount();
        } else {
            c.activation(node, i); // refuses, naming the input
        }
    }
    if (!parameterOperands.empty()) {
        auto* holder = static_cast<ParameterHolder*>(
            c.ownParameters(node, std::make_unique<ParameterHolder>(parameterShapes), initializers));
        for (std::size_t p = 0; p < parameterOperands.size(); ++p)
            operands[parameterOperands[p]].parameter = holder->parameter(p);
    }
    const Shape perSample = perSampleShape(outDims, *layout, c.batch());
    auto op = std::make_unique<ElementwiseOp>(node.name, kind, c.policy().layer().compute(), outExpanded, perSample,
                                              std::move(operands), std::move(valueShapes));
    c.bind(node, 0, c.addOp(node, std::move(op), values), *layout);
}

} // namespace

void addArithmeticNodeCompilers(NodeCompilerTable& table)
{
    for (const char* type : {"Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Erf", "Where"})
        table[type] = compileElementwise;
}

} // namespace mantissa::onnx_import
