#include "engine/onnx/export_layer_list.h"

#include "engine/model/layers/activated_layer.h"
#include "engine/model/layers/activation_layer.h"
#include "engine/model/layers/batch_norm.h"
#include "engine/model/layers/conv2d.h"
#include "engine/model/layers/dropout.h"
#include "engine/model/layers/linear.h"
#include "engine/model/layers/pool2d.h"
#include "engine/model/layers/residual.h"
#include "engine/onnx/model_file.h"
#include "engine/util/check.h"

#include <cstring>

namespace mantissa::onnx_import {

namespace {

class GraphWriter {
public:
    GraphWriter(onnx::GraphProto& graph, Backend& backend) : m_graph(graph), m_backend(backend) {}

    // Appends `layer` reading the value `input`; returns the value it writes.
    std::string layer(Layer& layer, const std::string& input)
    {
        if (auto* activated = dynamic_cast<ActivatedLayer*>(&layer)) {
            const std::string inner = this->layer(activated->inner(), input);
            for (const Sublayer& part : activated->sublayers())
                if (auto* activation = dynamic_cast<ActivationLayer*>(part.layer))
                    return this->activation(*activation, inner, layer.name() + ".activation");
            MANTISSA_ASSERT(false && "an activated layer holds an activation");
        }
        if (auto* linear = dynamic_cast<Linear*>(&layer))
            return this->linear(*linear, input);
        if (auto* conv = dynamic_cast<Conv2d*>(&layer))
            return this->conv(*conv, input);
        if (auto* norm = dynamic_cast<BatchNorm*>(&layer))
            return batchNorm(*norm, input);
        if (auto* pool = dynamic_cast<Pool2d*>(&layer))
            return this->pool(*pool, input);
        if (auto* activation = dynamic_cast<ActivationLayer*>(&layer))
            return this->activation(*activation, input, layer.name());
        if (auto* dropout = dynamic_cast<Dropout*>(&layer))
            return this->dropout(*dropout, input);
        if (auto* residual = dynamic_cast<Residual*>(&layer))
            return this->residual(*residual, input);
        if (layer.kind() == LayerKind::Flatten) {
            onnx::NodeProto& node = addNode("Flatten", layer.name(), {input});
            intAttribute(node, "axis", 1);
            return node.output(0);
        }
        throw ConfigError("export: layer " + layer.name() + " (" + std::string(enumKey(layer.kind())) +
                          ") has no ONNX form here yet; layer lists of linear, conv2d, batchnorm, pools, "
                          "flatten, dropout, relu, tanh, sigmoid and residual layers export");
    }

private:
    std::string linear(Linear& layer, const std::string& input)
    {
        if (layer.sharesTable() || layer.tokens() != 1)
            throw ConfigError(
                "export: layer " + layer.name() + " (linear) " +
                (layer.sharesTable() ? "shares the token embedding's table" : "runs on every token of a sequence") +
                ", which has no ONNX form here yet");
        const std::vector<Parameter*> parameters = layer.parameters();
        std::vector<std::string> inputs{input};
        for (Parameter* p : parameters)
            inputs.push_back(initializer(*p));
        onnx::NodeProto& node = addNode("Gemm", layer.name(), inputs);
        intAttribute(node, "transB", 1); // the weight is [out, in], as PyTorch's
        return node.output(0);
    }

    std::string conv(Conv2d& layer, const std::string& input)
    {
        const ConvGeometry g = layer.geometry(1);
        std::vector<std::string> inputs{input};
        for (Parameter* p : layer.parameters())
            inputs.push_back(initializer(*p));
        onnx::NodeProto& node = addNode("Conv", layer.name(), inputs);
        intsAttribute(node, "kernel_shape", {g.kH, g.kW});
        intsAttribute(node, "strides", {g.strideH, g.strideW});
        intsAttribute(node, "pads", {g.padH, g.padW, g.padH, g.padW});
        intsAttribute(node, "dilations", {g.dilationH, g.dilationW});
        intAttribute(node, "group", g.groups);
        return node.output(0);
    }

    std::string batchNorm(BatchNorm& layer, const std::string& input)
    {
        std::vector<std::string> inputs{input};
        for (Parameter* p : layer.parameters()) // gamma, beta
            inputs.push_back(initializer(*p));
        for (auto& [name, tensor] : layer.buffers()) // running mean, running variance
            inputs.push_back(initializer(name, *tensor));
        onnx::NodeProto& node = addNode("BatchNormalization", layer.name(), inputs);
        floatAttribute(node, "epsilon", layer.epsilon());
        // ONNX's momentum weighs the running value: PyTorch's (and ours) weighs the batch's.
        floatAttribute(node, "momentum", 1.0f - layer.momentum());
        return node.output(0);
    }

    std::string pool(Pool2d& layer, const std::string& input)
    {
        const PoolGeometry g = layer.geometry(1);
        onnx::NodeProto& node =
            addNode(layer.kind() == LayerKind::MaxPool ? "MaxPool" : "AveragePool", layer.name(), {input});
        intsAttribute(node, "kernel_shape", {g.kH, g.kW});
        intsAttribute(node, "strides", {g.strideH, g.strideW});
        intsAttribute(node, "pads", {g.padH, g.padW, g.padH, g.padW});
        if (layer.kind() == LayerKind::AvgPool)
            intAttribute(node, "count_include_pad", g.countPadding ? 1 : 0);
        return node.output(0);
    }

    std::string activation(ActivationLayer& layer, const std::string& input, const std::string& name)
    {
        const char* op = nullptr;
        switch (layer.activation()) {
        case Activation::Relu: op = "Relu"; break;
        case Activation::Tanh: op = "Tanh"; break;
        case Activation::Sigmoid: op = "Sigmoid"; break;
        case Activation::Gelu:
            throw ConfigError("export: layer " + name + " uses GELU, which has no ONNX form here yet");
        }
        return addNode(op, name, {input}).output(0);
    }

    std::string dropout(Dropout& layer, const std::string& input)
    {
        onnx::TensorProto& ratio = *m_graph.add_initializer();
        ratio.set_name(layer.name() + ".ratio");
        ratio.set_data_type(onnx::TensorProto::FLOAT);
        ratio.add_float_data(layer.rate());
        return addNode("Dropout", layer.name(), {input, ratio.name()}).output(0);
    }

    std::string residual(Residual& layer, const std::string& input)
    {
        std::string branch = input, shortcut = input;
        for (const Sublayer& part : layer.sublayers()) {
            if (part.role == "shortcut")
                shortcut = this->layer(*part.layer, input);
            else
                branch = this->layer(*part.layer, branch);
        }
        return addNode("Add", layer.name(), {branch, shortcut}).output(0);
    }

    onnx::NodeProto& addNode(const std::string& op, const std::string& name, const std::vector<std::string>& inputs)
    {
        onnx::NodeProto& node = *m_graph.add_node();
        node.set_op_type(op);
        node.set_name(name);
        for (const std::string& in : inputs)
            node.add_input(in);
        node.add_output(name + ".out");
        return node;
    }

    std::string initializer(Parameter& p) { return initializer(p.name, p.master); }

    std::string initializer(const std::string& name, const Tensor& t)
    {
        std::vector<float> values(static_cast<std::size_t>(t.numel()));
        m_backend.download(t, values.data());
        onnx::TensorProto& tensor = *m_graph.add_initializer();
        tensor.set_name(name);
        tensor.set_data_type(onnx::TensorProto::FLOAT);
        for (std::int64_t d : t.shape().dims())
            tensor.add_dims(d);
        std::string bytes(values.size() * sizeof(float), '\0');
        std::memcpy(bytes.data(), values.data(), bytes.size());
        tensor.set_raw_data(std::move(bytes));
        return name;
    }

    static void intAttribute(onnx::NodeProto& node, const char* name, std::int64_t value)
    {
        onnx::AttributeProto& a = *node.add_attribute();
        a.set_name(name);
        a.set_type(onnx::AttributeProto::INT);
        a.set_i(value);
    }
    static void intsAttribute(onnx::NodeProto& node, const char* name, std::initializer_list<std::int64_t> values)
    {
        onnx::AttributeProto& a = *node.add_attribute();
        a.set_name(name);
        a.set_type(onnx::AttributeProto::INTS);
        for (std::int64_t v : values)
            a.add_ints(v);
    }
    static void floatAttribute(onnx::NodeProto& node, const char* name, float value)
    {
        onnx::AttributeProto& a = *node.add_attribute();
        a.set_name(name);
        a.set_type(onnx::AttributeProto::FLOAT);
        a.set_f(value);
    }

    onnx::GraphProto& m_graph;
    Backend& m_backend;
};

// A float tensor of [batch, dims...] with the batch dynamic.
void describeValue(onnx::ValueInfoProto& value, const std::string& name, const std::vector<std::int64_t>& dims)
{
    value.set_name(name);
    onnx::TypeProto_Tensor& tensor = *value.mutable_type()->mutable_tensor_type();
    tensor.set_elem_type(onnx::TensorProto::FLOAT);
    tensor.mutable_shape()->add_dim()->set_dim_param("batch");
    for (std::int64_t d : dims)
        tensor.mutable_shape()->add_dim()->set_dim_value(d);
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
    describeValue(*graph.add_input(), "input", model.inputShape().dims());
    GraphWriter writer(graph, backend);
    std::string value = "input";
    for (Layer* layer : model.layers())
        value = writer.layer(*layer, value);
    // The last node's output is the graph's: renamed "logits" where the nodes read it.
    for (onnx::NodeProto& node : *graph.mutable_node())
        for (std::string& output : *node.mutable_output())
            if (output == value)
                output = "logits";
    describeValue(*graph.add_output(), "logits", {model.classes()});
    return proto;
}

} // namespace mantissa::onnx_import
