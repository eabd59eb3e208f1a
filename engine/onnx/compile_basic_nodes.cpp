// The op types an MLP exports to: Gemm as a linear layer, the pointwise activations, Flatten
// and Identity. (Add and Reshape, which MLPs export to too, are the tensor family's:
// compile_tensor_nodes.cpp.)
#include "engine/model/layers/activation_layer.h"
#include "engine/model/layers/flatten.h"
#include "engine/model/layers/linear.h"
#include "engine/onnx/node_compilers.h"
#include "engine/util/check.h"

namespace mantissa::onnx_import {

namespace {

// Y = alpha op(A) op(B) + beta C. With transA = 0, alpha = beta = 1, transB = 1 and B a
// trainable [out, in] initializer, this is exactly Linear's y = x W^T + b: the same [out, in]
// layout (so the parameter holds the initializer's values as they are and its gradient is ONNX's
// dB), the same product and the bias C of [out] (or [1, out]) broadcast over the rows. PyTorch
// exports nn.Linear as exactly this. The other forms are refused until they have ops of their own.
void compileGemm(OnnxCompiler& c, const OnnxNode& node)
{
    if (node.intAttribute("transA", 0) != 0 || node.intAttribute("transB", 0) != 1)
        c.refuse(node, "only transA = 0 and transB = 1 (a linear layer's form) compile so far");
    if (node.floatAttribute("alpha", 1.0f) != 1.0f || node.floatAttribute("beta", 1.0f) != 1.0f)
        c.refuse(node, "only alpha = beta = 1 compile so far");
    const ValueId input = c.activation(node, 0);
    const Shape inputShape = c.shapeOf(input);
    // A is [rows, features] with the batch among the rows: [batch, features], or [tokens * batch,
    // features] where PyTorch's attention flattened a sequence.
    const BatchLayout layout = c.layout(node.inputs[0]);
    if (c.dims(node.inputs[0]).size() != 2 || layout.axis != 0)
        c.refuse(node, "A must be [rows, features] with the batch among the rows, got " +
                           Shape(c.dims(node.inputs[0])).toString());
    const std::int64_t features = inputShape.dims().back();
    const OnnxTensor& weight = c.parameter(node, 1);
    if (weight.shape.size() != 2 || weight.shape[1] != features)
        c.refuse(node, "B must be [out, " + std::to_string(features) + "]");
    const std::int64_t out = weight.shape[0];
    std::vector<const OnnxTensor*> initializers{&weight};
    const bool hasBias = node.inputs.size() > 2 && !node.inputs[2].empty();
    if (hasBias) {
        const OnnxTensor& bias = c.parameter(node, 2);
        const bool rowVector = bias.shape.size() == 1 || (bias.shape.size() == 2 && bias.shape[0] == 1);
        if (!rowVector || bias.shape.back() != out)
            c.refuse(node, "only a bias C of [" + std::to_string(out) + "] compiles so far");
        initializers.push_back(&bias);
    }
    c.addLayer(node, std::make_unique<Linear>(features, out, hasBias, "", false, inputShape.numel() / features), input,
               std::move(initializers), layout);
}

void compileIdentity(OnnxCompiler& c, const OnnxNode& node)
{
    c.bind(node, 0, c.activation(node, 0), c.layout(node.inputs[0]));
}

template <Activation kind>
void compileActivation(OnnxCompiler& c, const OnnxNode& node)
{
    c.addLayer(node, std::make_unique<ActivationLayer>(kind), c.activation(node, 0), {}, c.layout(node.inputs[0]));
}

// Axis 1 keeps the batch and joins the rest, which is Flatten's [N, C, H, W] -> [N, CHW].
void compileFlatten(OnnxCompiler& c, const OnnxNode& node)
{
    if (node.intAttribute("axis", 1) != 1 || !c.layout(node.inputs.at(0)).batchFirst())
        c.refuse(node, "only axis = 1 of a batch-first value compiles so far");
    c.addLayer(node, std::make_unique<Flatten>(), c.activation(node, 0), {});
}

} // namespace

void addBasicNodeCompilers(NodeCompilerTable& table)
{
    table["Identity"] = compileIdentity;
    table["Relu"] = compileActivation<Activation::Relu>;
    table["Tanh"] = compileActivation<Activation::Tanh>;
    table["Sigmoid"] = compileActivation<Activation::Sigmoid>;
    table["Flatten"] = compileFlatten;
    table["Gemm"] = compileGemm;
}

} // namespace mantissa::onnx_import
