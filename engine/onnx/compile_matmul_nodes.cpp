// MatMul. A computed value times a trainable initializer is a linear layer over the last axis:
// read through a Transpose (PyTorch's nn.Linear on a sequence exports Transpose(W) then MatMul)
// its weight is the initializer as it is, [out, in]; read as it is, [K, N] (TensorFlow's and
// hand-built graphs), the layer holds its transpose, loaded and exported as such. Where the
// initializer is a token embedding's table, the layer is the tied output head and writes its
// gradient into the table's. Two computed values multiply as a batched product over the last two
// axes (batched_matmul_op.h), a GEMM site of its own.
#include "engine/model/layers/linear.h"
#include "engine/model/layers/token_embedding.h"
#include "engine/onnx/attention_pattern.h"
#include "engine/onnx/batched_matmul_op.h"
#include "engine/onnx/tensor_node_families.h"
#include "engine/util/check.h"

namespace mantissa::onnx_import {

namespace {

void compileLinearMatMul(OnnxCompiler& c, const OnnxNode& node, const ParameterView& weight)
{
    const std::string& inputName = node.inputs[0];
    const ValueId input = c.activation(node, 0);
    const std::vector<std::int64_t>& inDims = c.dims(inputName);
    const BatchLayout layout = c.layout(inputName);
    if (weight.dims.size() != 2 || weight.overBatch || inDims.size() < 2)
        c.refuse(node, "only a [batch..., K] value times a [K, N] initializer compiles as a linear layer");
    if (layout.axis + 1 == inDims.size())
        c.refuse(node, "the batch lies in the last axis, which the product reduces over");
    const std::int64_t in = weight.dims[0], out = weight.dims[1];
    if (inDims.back() != in)
        c.refuse(node, "the weight is [" + std::to_string(in) + ", " + std::to_string(out) + "] for an input of " +
                           Shape(inDims).toString());
    const std::int64_t rows = c.shapeOf(input).numel() / in;
    auto linear = std::make_unique<Linear>(in, out, false, "", false, rows);
    std::vector<const OnnxTensor*> initializers;
    if (!weight.transposed && c.embeddingOf(weight.tensor->name))
        c.refuse(node, "a token embedding's table read as [K, N] without a Transpose is not a tied head");
    if (TokenEmbedding* embedding = c.embeddingOf(weight.tensor->name)) {
        // A head tied to the embedding: [vocabulary, width] is the head's [out, in].
        linear->setSharesTable(true);
        linear->tieWeight(embedding->table());
        embedding->setTableShared(true);
    } else {
        c.claim(node, *weight.tensor);
        initializers.push_back(weight.tensor);
        // Read as it is ([K, N], as TensorFlow and hand-built graphs write it), the weight is
        // the transpose of what the layer holds.
        if (!weight.transposed)
            c.holdTransposed(*weight.tensor);
    }
    c.addLayer(node, std::move(linear), input, std::move(initializers), layout);
}

// `scores`: attention's S, which a softmax reads (attention_pattern.h).
void compileBatchedMatMul(OnnxCompiler& c, const OnnxNode& node, bool scores = false, float alpha = 1.0f)
{
    const std::string &left = node.inputs[0], &right = node.inputs[1];
    const ValueId a = c.activation(node, 0), b = c.activation(node, 1);
    const std::vector<std::int64_t>&da = c.dims(left), &db = c.dims(right);
    const BatchLayout layout = c.layout(left);
    if (da.size() < 3 || da.size() != db.size() || !(c.layout(right) == layout))
        c.refuse(node, "only two values of one rank, each [planes..., rows, columns] with the batch among the planes, "
                       "compile as a batched product; got " +
                           Shape(da).toString() + " and " + Shape(db).toString());
    if (layout.axis + 2 >= da.size())
        c.refuse(node, "the batch lies in a matrix axis, not among the planes");
    for (std::size_t axis = 0; axis + 2 < da.size(); ++axis)
        if (da[axis] != db[axis])
            c.refuse(node, "broadcasting the planes of a batched product does not compile");
    const std::int64_t m = da[da.size() - 2], k = da.back(), n = db.back();
    if (db[db.size() - 2] != k)
        c.refuse(node,
                 "the products' inner dimensions differ: " + Shape(da).toString() + " and " + Shape(db).toString());
    const std::int64_t planes = c.shapeOf(a).numel() / (m * k);
    auto product = std::make_unique<BatchedProduct>(m, n, k);
    product->setName(node.name);
    product->applyPrecision(c.policy(), c.policy().layerNamed(node.name, c.policy().layer()));
    auto* owned = static_cast<BatchedProduct*>(c.graph().own(std::move(product)));
    const std::string& output = node.outputs.at(0);
    Shape perSample;
    try {
        perSample = perSampleShape(c.dims(output), layout, c.batch());
    } catch (const ConfigError& e) {
        c.refuse(node, e.what());
    }
    // Attention's S and dP in the dtypes the engine's attention holds them in.
    const DType compute = owned->computeType();
    const AttentionScoreTypes attention = importedAttentionTypes(compute);
    ProductTypes types{compute, compute, compute};
    if (scores)
        types = {attention.scores, attention.scoresGradient, compute};
    if (c.isAttentionProbabilities(a))
        types.leftGradient = attention.probabilitiesGradient;
    c.bind(node, 0,
           c.addOp(node, std::make_unique<BatchedMatMulOp>(*owned, planes, m, n, k, perSample, alpha, types), {a, b}),
           layout);
}

void compileMatMul(OnnxCompiler& c, const OnnxNode& node)
{
    if (node.inputs.size() != 2)
        c.refuse(node, "it takes two inputs");
    if (!c.isActivation(node, 0))
        c.refuse(node, "its first input must be computed by an earlier node");
    if (const std::optional<ParameterView> weight = c.parameterView(node, 1))
        return compileLinearMatMul(c, node, *weight);
    if (c.isActivation(node, 1))
        return compileBatchedMatMul(c, node);
    c.refuse(node, "its second input must be a trainable initializer or a computed value");
}

} // namespace

void compileScoresMatMul(OnnxCompiler& c, const OnnxNode& node, float alpha)
{
    if (node.inputs.size() != 2 || !c.isActivation(node, 0) || !c.isActivation(node, 1))
        c.refuse(node, "attention's scores multiply two computed values");
    compileBatchedMatMul(c, node, true, alpha);
}

void addMatMulNodeCompilers(NodeCompilerTable& table) { table["MatMul"] = compileMatMul; }

} // namespace mantissa::onnx_import
