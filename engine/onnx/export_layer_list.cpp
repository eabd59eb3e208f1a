#include "engine/onnx/export_layer_list.h"

#include "engine/model/layers/activated_layer.h"
#include "engine/model/layers/activation_layer.h"
#include "engine/model/layers/batch_norm.h"
#include "engine/model/layers/dropout.h"
#include "engine/model/layers/pool2d.h"
#include "engine/model/layers/residual.h"
#include "engine/onnx/export_layer_writers.h"
#include "engine/onnx/export_transformer.h"
#include "engine/onnx/model_file.h"
#include "engine/util/check.h"

#include <cmath>

namespace mantissa::onnx_import {

std::string writeConv(OnnxGraphWriter& w, Conv2d& layer, const std::string& input, const std::string& name)
{
    const ConvGeometry g = layer.geometry(1);
    std::vector<std::string> inputs{input};
    for (Parameter* p : layer.parameters())
        inputs.push_back(w.initializer(*p));
    onnx::NodeProto& node = w.addNode("Conv", name, inputs);
    OnnxGraphWriter::intsAttribute(node, "kernel_shape", {g.kH, g.kW});
    OnnxGraphWriter::intsAttribute(node, "strides", {g.strideH, g.strideW});
    OnnxGraphWriter::intsAttribute(node, "pads", {g.padH, g.padW, g.padH, g.padW});
    OnnxGraphWriter::intsAttribute(node, "dilations", {g.dilationH, g.dilationW});
    OnnxGraphWriter::intAttribute(node, "group", g.groups);
    return node.output(0);
}

std::string writeLinearRows(OnnxGraphWriter& w, Linear& layer, const std::string& rows)
{
    std::vector<std::string> inputs{rows};
    for (Parameter* p : layer.parameters()) // weight, then bias
        inputs.push_back(w.initializer(*p));
    onnx::NodeProto& node = w.addNode("Gemm", layer.name(), inputs);
    OnnxGraphWriter::intAttribute(node, "transB", 1); // the weight is [out, in], as PyTorch's
    return node.output(0);
}

std::string writeLinear(OnnxGraphWriter& w, Linear& layer, const std::string& input, const std::string& tiedTable)
{
    const std::string& name = layer.name();
    if (layer.sharesTable()) {
        if (tiedTable.empty())
            throw ConfigError("export: layer " + name + " (linear) is tied to a token embedding that none precedes");
        onnx::NodeProto& transposed = w.addNode("Transpose", name + ".table", {tiedTable});
        OnnxGraphWriter::intsAttribute(transposed, "perm", {1, 0});
        const std::vector<Parameter*> bias = layer.parameters(); // a tied head lists only its bias
        const std::string product =
            w.addNode("MatMul", bias.empty() ? name : name + ".product", {input, transposed.output(0)}).output(0);
        return bias.empty() ? product : w.addNode("Add", name, {product, w.initializer(*bias[0])}).output(0);
    }
    if (layer.tokens() == 1)
        return writeLinearRows(w, layer, input);
    onnx::NodeProto& flatten =
        w.addNode("Reshape", name + ".rows", {input, w.intConstant(name + ".rows.shape", {-1, layer.inFeatures()})});
    const std::string product = writeLinearRows(w, layer, flatten.output(0));
    return w
        .addNode("Reshape", name + ".tokens",
                 {product, w.intConstant(name + ".tokens.shape", {-1, layer.tokens(), layer.outFeatures()})})
        .output(0);
}

std::string writeGelu(OnnxGraphWriter& w, const std::string& input, const std::string& name)
{
    const std::string root2 = w.floatConstant(name + ".sqrt2", {}, {static_cast<float>(std::sqrt(2.0))});
    const std::string one = w.floatConstant(name + ".one", {}, {1.0f});
    const std::string half = w.floatConstant(name + ".half", {}, {0.5f});
    const std::string scaled = w.addNode("Div", name + ".scaled", {input, root2}).output(0);
    const std::string erf = w.addNode("Erf", name + ".erf", {scaled}).output(0);
    const std::string shifted = w.addNode("Add", name + ".shifted", {erf, one}).output(0);
    const std::string product = w.addNode("Mul", name + ".product", {input, shifted}).output(0);
    return w.addNode("Mul", name, {product, half}).output(0);
}

namespace {

class LayerListWriter {
public:
    explicit LayerListWriter(OnnxGraphWriter& w) : m_w(w) {}

    // Appends `layer` reading the value `input` of `shape` (a batch of 1); returns the value it
    // writes.
    std::string layer(Layer& layer, const std::string& input, const Shape& shape)
    {
        if (auto* activated = dynamic_cast<ActivatedLayer*>(&layer)) {
            const std::string inner = this->layer(activated->inner(), input, shape);
            for (const Sublayer& part : activated->sublayers())
                if (auto* activation = dynamic_cast<ActivationLayer*>(part.layer))
                    return this->activation(*activation, inner, layer.name() + ".activation");
            MANTISSA_ASSERT(false && "an activated layer holds an activation");
        }
        if (auto* linear = dynamic_cast<Linear*>(&layer))
            return writeLinear(m_w, *linear, input, m_tokenTable);
        if (auto* conv = dynamic_cast<Conv2d*>(&layer))
            return writeConv(m_w, *conv, input, conv->name());
        if (auto* norm = dynamic_cast<BatchNorm*>(&layer))
            return batchNorm(*norm, input);
        if (auto* pool = dynamic_cast<Pool2d*>(&layer))
            return this->pool(*pool, input);
        if (auto* activation = dynamic_cast<ActivationLayer*>(&layer))
            return this->activation(*activation, input, layer.name());
        if (auto* dropout = dynamic_cast<Dropout*>(&layer))
            return this->dropout(*dropout, input);
        if (auto* residual = dynamic_cast<Residual*>(&layer))
            return this->residual(*residual, input, shape);
        if (layer.kind() == LayerKind::Flatten) {
            onnx::NodeProto& node = m_w.addNode("Flatten", layer.name(), {input});
            OnnxGraphWriter::intAttribute(node, "axis", 1);
            return node.output(0);
        }
        if (auto* embedding = dynamic_cast<TokenEmbedding*>(&layer)) {
            m_tokenTable = embedding->table()->name;
            return writeTokenEmbedding(m_w, *embedding, input);
        }
        if (auto* positions = dynamic_cast<PositionalEmbedding*>(&layer))
            return writePositionalEmbedding(m_w, *positions, input);
        if (auto* patches = dynamic_cast<PatchEmbedding*>(&layer))
            return writePatchEmbedding(m_w, *patches, input);
        if (auto* norm = dynamic_cast<RowNorm*>(&layer))
            return writeRowNorm(m_w, *norm, input);
        if (auto* attention = dynamic_cast<Attention*>(&layer))
            return writeAttention(m_w, *attention, input, shape[1]);
        if (auto* mlp = dynamic_cast<Mlp*>(&layer))
            return writeMlp(m_w, *mlp, input);
        if (auto* block = dynamic_cast<TransformerBlock*>(&layer))
            return writeTransformerBlock(m_w, *block, input, shape[1]);
        throw ConfigError("export: layer " + layer.name() + " (" + std::string(enumKey(layer.kind())) +
                          ") has no ONNX form here yet");
    }

private:
    std::string batchNorm(BatchNorm& layer, const std::string& input)
    {
        std::vector<std::string> inputs{input};
        for (Parameter* p : layer.parameters()) // gamma, beta
            inputs.push_back(m_w.initializer(*p));
        for (auto& [name, tensor] : layer.buffers()) // running mean, running variance
            inputs.push_back(m_w.initializer(name, *tensor));
        onnx::NodeProto& node = m_w.addNode("BatchNormalization", layer.name(), inputs);
        OnnxGraphWriter::floatAttribute(node, "epsilon", layer.epsilon());
        // ONNX's momentum weighs the running value: PyTorch's (and ours) weighs the batch's.
        OnnxGraphWriter::floatAttribute(node, "momentum", 1.0f - layer.momentum());
        return node.output(0);
    }

    std::string pool(Pool2d& layer, const std::string& input)
    {
        const PoolGeometry g = layer.geometry(1);
        onnx::NodeProto& node =
            m_w.addNode(layer.kind() == LayerKind::MaxPool ? "MaxPool" : "AveragePool", layer.name(), {input});
        OnnxGraphWriter::intsAttribute(node, "kernel_shape", {g.kH, g.kW});
        OnnxGraphWriter::intsAttribute(node, "strides", {g.strideH, g.strideW});
        OnnxGraphWriter::intsAttribute(node, "pads", {g.padH, g.padW, g.padH, g.padW});
        if (layer.kind() == LayerKind::AvgPool)
            OnnxGraphWriter::intAttribute(node, "count_include_pad", g.countPadding ? 1 : 0);
        return node.output(0);
    }

    std::string activation(ActivationLayer& layer, const std::string& input, const std::string& name)
    {
        switch (layer.activation()) {
        case Activation::Relu: return m_w.addNode("Relu", name, {input}).output(0);
        case Activation::Tanh: return m_w.addNode("Tanh", name, {input}).output(0);
        case Activation::Sigmoid: return m_w.addNode("Sigmoid", name, {input}).output(0);
        case Activation::Gelu: return writeGelu(m_w, input, name);
        }
        MANTISSA_ASSERT(false && "every activation has a form");
        return {};
    }

    std::string dropout(Dropout& layer, const std::string& input)
    {
        const std::string ratio = m_w.scalarInitializer(layer.name() + ".ratio", layer.rate());
        return m_w.addNode("Dropout", layer.name(), {input, ratio}).output(0);
    }

    std::string residual(Residual& layer, const std::string& input, const Shape& shape)
    {
        std::string branch = input, shortcut = input;
        Shape branchShape = shape;
        for (const Sublayer& part : layer.sublayers()) {
            if (part.role == "shortcut") {
                shortcut = this->layer(*part.layer, input, shape);
            } else {
                branch = this->layer(*part.layer, branch, branchShape);
                branchShape = part.layer->outputShape(branchShape);
            }
        }
        return m_w.addNode("Add", layer.name(), {branch, shortcut}).output(0);
    }

    OnnxGraphWriter& m_w;
    std::string m_tokenTable; // the token embedding's initializer, for a head tied to it
};

// A tensor of [batch, dims...] with the batch dynamic.
void describeValue(onnx::ValueInfoProto& value, const std::string& name, onnx::TensorProto::DataType type,
                   const std::vector<std::int64_t>& dims)
{
    value.set_name(name);
    onnx::TypeProto_Tensor& tensor = *value.mutable_type()->mutable_tensor_type();
    tensor.set_elem_type(type);
    tensor.mutable_shape()->add_dim()->set_dim_param("batch");
    for (std::int64_t d : dims)
        tensor.mutable_shape()->add_dim()->set_dim_value(d);
}

std::vector<std::int64_t> perSampleDims(const Shape& shape)
{
    return std::vector<std::int64_t>(shape.dims().begin() + 1, shape.dims().end());
}

} // namespace

onnx::ModelProto layerListToOnnx(Model& model, Backend& backend)
{
    onnx::ModelProto proto;
    proto.set_ir_version(onnx::IR_VERSION);
    proto.set_producer_name("mantissa");
    onnx::OperatorSetIdProto& opset = *proto.add_opset_import();
    opset.set_domain("");
    opset.set_version(kNewestOpset);
    onnx::GraphProto& graph = *proto.mutable_graph();
    graph.set_name("mantissa");
    const std::vector<Layer*> layers = model.layers();
    // Token ids are integers in ONNX (Gather's indices); the engine reads them as whole floats.
    const bool tokenIds = !layers.empty() && layers.front()->kind() == LayerKind::TokenEmbedding;
    describeValue(*graph.add_input(), "input", tokenIds ? onnx::TensorProto::INT64 : onnx::TensorProto::FLOAT,
                  model.inputShape().dims());
    OnnxGraphWriter nodes(graph, backend);
    LayerListWriter writer(nodes);
    std::string value = "input";
    std::vector<std::int64_t> batchOfOne{1};
    batchOfOne.insert(batchOfOne.end(), model.inputShape().dims().begin(), model.inputShape().dims().end());
    Shape shape(batchOfOne);
    for (Layer* layer : layers) {
        value = writer.layer(*layer, value, shape);
        shape = layer->outputShape(shape);
    }
    // The last node's output is the graph's: renamed "logits" where the nodes read it.
    for (onnx::NodeProto& node : *graph.mutable_node())
        for (std::string& output : *node.mutable_output())
            if (output == value)
                output = "logits";
    describeValue(*graph.add_output(), "logits", onnx::TensorProto::FLOAT, perSampleDims(shape));
    return proto;
}

} // namespace mantissa::onnx_import
