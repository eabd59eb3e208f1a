// The reductions: LayerNormalization over the last axis as the engine's layer norm (RowNorm:
// fp32 statistics and an fp32 gain and bias, which are the initializers as they are), Softmax and
// LogSoftmax over the last axis (softmax_op.h) and ReduceMean (reduce_mean_op.h), each summing in
// fp32 whatever the compute type. None reduces over the batch's axis.
#include "engine/model/layers/row_norm.h"
#include "engine/onnx/attention_pattern.h"
#include "engine/onnx/index_map_op.h"
#include "engine/onnx/reduce_mean_op.h"
#include "engine/onnx/softmax_op.h"
#include "engine/onnx/tensor_node_families.h"
#include "engine/util/check.h"

#include <algorithm>

namespace mantissa::onnx_import {

namespace {

// The last axis of the value input 0 names, which must not hold the batch.
std::int64_t lastAxisWidth(const OnnxCompiler& c, const OnnxNode& node, std::int64_t axisAttribute)
{
    const std::vector<std::int64_t>& dims = c.dims(node.inputs.at(0));
    if (normalisedAxis(c, node, axisAttribute, dims.size()) + 1 != dims.size())
        c.refuse(node, "only the last axis compiles, not axis " + std::to_string(axisAttribute));
    if (c.layout(node.inputs[0]).axis + 1 == dims.size())
        c.refuse(node, "the batch lies in the last axis, which it reduces over");
    return dims.back();
}

void compileLayerNormalization(OnnxCompiler& c, const OnnxNode& node)
{
    const ValueId input = c.activation(node, 0);
    const std::int64_t width = lastAxisWidth(c, node, node.intAttribute("axis", -1));
    const OnnxTensor& scale = c.parameter(node, 1);
    std::vector<const OnnxTensor*> initializers{&scale};
    const bool hasBias = node.inputs.size() > 2 && !node.inputs[2].empty();
    if (hasBias)
        initializers.push_back(&c.parameter(node, 2));
    for (const OnnxTensor* t : initializers)
        if (t->shape != std::vector<std::int64_t>{width})
            c.refuse(node, "its scale and bias must be [" + std::to_string(width) + "]");
    for (std::size_t k = 1; k < node.outputs.size(); ++k)
        if (!node.outputs[k].empty())
            c.refuse(node, "its mean and inverse deviation outputs do not compile");
    const float epsilon = node.floatAttribute("epsilon", 1e-5f);
    c.addLayer(node,
               std::make_unique<RowNorm>(RowNormKind::LayerNorm, width, c.shapeOf(input).numel(), epsilon, hasBias,
                                         InternalPrecision::Fp32),
               input, std::move(initializers), c.layout(node.inputs[0]));
}

// `attention`: the softmax of attention's scores (attention_pattern.h), causal or not.
template <bool Logarithm>
ValueId compileSoftmaxOf(OnnxCompiler& c, const OnnxNode& node, bool attention, bool causal)
{
    const ValueId input = c.activation(node, 0);
    if (c.onnx().opsetVersion < 13)
        c.refuse(node, "opsets before 13 flatten the axes from `axis` on, which does not compile");
    const std::int64_t width = lastAxisWidth(c, node, node.intAttribute("axis", -1));
    const DType compute = c.policy().layer().compute();
    const SoftmaxTypes types =
        attention ? SoftmaxTypes::ofScores(importedAttentionTypes(compute)) : SoftmaxTypes::plain(compute);
    const ValueId output =
        c.addOp(node, std::make_unique<SoftmaxOp>(node.name, types, width, Logarithm, causal), {input});
    c.bind(node, 0, output, c.layout(node.inputs[0]));
    return output;
}

template <bool Logarithm>
void compileSoftmax(OnnxCompiler& c, const OnnxNode& node)
{
    compileSoftmaxOf<Logarithm>(c, node, false, false);
}

void compileReduceMean(OnnxCompiler& c, const OnnxNode& node)
{
    const ValueId input = c.activation(node, 0);
    const std::string& name = node.inputs[0];
    const std::vector<std::int64_t>& dims = c.dims(name);
    const BatchLayout in = c.layout(name);
    std::vector<std::int64_t> axes = node.intsAttribute("axes");
    if (node.inputs.size() > 1 && !node.inputs[1].empty())
        axes = constantInts(c, node, 1);
    if (axes.empty()) // ONNX's default reduces every axis, the batch's among them
        c.refuse(node, "reducing every axis mixes the samples");
    const bool keep = node.intAttribute("keepdims", 1) != 0;
    const std::vector<std::int64_t> inExpanded = expandedOf(c, name);
    std::vector<bool> reduced(inExpanded.size(), false);
    std::int64_t count = 1;
    std::size_t removedBefore = 0; // reduced axes before the batch's, which keepdims = 0 drops
    for (std::int64_t a : axes) {
        const std::size_t axis = normalisedAxis(c, node, a, dims.size());
        const std::size_t e = expandedAxis(c, node, in, axis);
        if (!reduced[e]) {
            reduced[e] = true;
            count *= inExpanded[e];
            removedBefore += axis < in.axis ? 1 : 0;
        }
    }
    BatchLayout out = in;
    if (!keep)
        out.axis -= removedBefore;
    // Each input element's output element: its index with the reduced axes at 0.
    std::vector<std::int64_t> outExpanded;
    for (std::size_t j = 0; j < inExpanded.size(); ++j)
        outExpanded.push_back(reduced[j] ? 1 : inExpanded[j]);
    const std::vector<std::int64_t> outStrides = rowMajorStrides(outExpanded);
    std::vector<std::int64_t> target;
    forEachIndex(inExpanded, [&](const std::vector<std::int64_t>& index) {
        std::int64_t offset = 0;
        for (std::size_t j = 0; j < index.size(); ++j)
            offset += (reduced[j] ? 0 : index[j]) * outStrides[j];
        target.push_back(offset);
    });
    Shape perSample;
    try {
        perSample = perSampleShape(c.dims(node.outputs.at(0)), out, c.batch());
    } catch (const ConfigError& e) {
        c.refuse(node, e.what());
    }
    c.bind(node, 0,
           c.addOp(node,
                   std::make_unique<ReduceMeanOp>(node.name, c.policy().layer().compute(), c.shapeOf(input), perSample,
                                                  std::move(target), count),
                   {input}),
           out);
}

} // namespace

void compileScoresSoftmax(OnnxCompiler& c, const OnnxNode& node, const std::string& scores, bool causal)
{
    OnnxNode reading = node;
    reading.inputs = {scores};
    c.markAttentionProbabilities(compileSoftmaxOf<false>(c, reading, true, causal));
}

void addNormalisationNodeCompilers(NodeCompilerTable& table)
{
    table["LayerNormalization"] = compileLayerNormalization;
    table["Softmax"] = compileSoftmax<false>;
    table["LogSoftmax"] = compileSoftmax<true>;
    table["ReduceMean"] = compileReduceMean;
}

} // namespace mantissa::onnx_import
