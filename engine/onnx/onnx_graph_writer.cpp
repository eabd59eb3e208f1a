#include "engine/onnx/onnx_graph_writer.h"

#include <cstring>

namespace mantissa::onnx_import {

namespace {

void fillFloats(onnx::TensorProto& tensor, const std::vector<std::int64_t>& dims, const std::vector<float>& values)
{
    tensor.set_data_type(onnx::TensorProto::FLOAT);
    for (std::int64_t d : dims)
        tensor.add_dims(d);
    std::string bytes(values.size() * sizeof(float), '\0');
    std::memcpy(bytes.data(), values.data(), bytes.size());
    tensor.set_raw_data(std::move(bytes));
}

onnx::TensorProto& constantTensor(onnx::NodeProto& node)
{
    onnx::AttributeProto& a = *node.add_attribute();
    a.set_name("value");
    a.set_type(onnx::AttributeProto::TENSOR);
    a.mutable_t()->set_name(node.output(0));
    return *a.mutable_t();
}

} // namespace

onnx::NodeProto& OnnxGraphWriter::addNode(const std::string& op, const std::string& name,
                                          const std::vector<std::string>& inputs)
{
    onnx::NodeProto& node = *m_graph.add_node();
    node.set_op_type(op);
    node.set_name(name);
    for (const std::string& in : inputs)
        node.add_input(in);
    node.add_output(name + ".out");
    return node;
}

std::string OnnxGraphWriter::initializer(const std::string& name, const Tensor& t)
{
    std::vector<float> values(static_cast<std::size_t>(t.numel()));
    m_backend.download(t, values.data());
    onnx::TensorProto& tensor = *m_graph.add_initializer();
    tensor.set_name(name);
    fillFloats(tensor, t.shape().dims(), values);
    return name;
}

std::string OnnxGraphWriter::floatConstant(const std::string& name, const std::vector<std::int64_t>& dims,
                                           const std::vector<float>& values)
{
    onnx::NodeProto& node = addNode("Constant", name, {});
    fillFloats(constantTensor(node), dims, values);
    return node.output(0);
}

std::string OnnxGraphWriter::intConstant(const std::string& name, const std::vector<std::int64_t>& values)
{
    onnx::NodeProto& node = addNode("Constant", name, {});
    onnx::TensorProto& tensor = constantTensor(node);
    tensor.set_data_type(onnx::TensorProto::INT64);
    tensor.add_dims(static_cast<std::int64_t>(values.size()));
    for (std::int64_t v : values)
        tensor.add_int64_data(v);
    return node.output(0);
}

std::string OnnxGraphWriter::scalarInitializer(const std::string& name, float value)
{
    onnx::TensorProto& tensor = *m_graph.add_initializer();
    tensor.set_name(name);
    tensor.set_data_type(onnx::TensorProto::FLOAT);
    tensor.add_float_data(value);
    return name;
}

void OnnxGraphWriter::intAttribute(onnx::NodeProto& node, const char* name, std::int64_t value)
{
    onnx::AttributeProto& a = *node.add_attribute();
    a.set_name(name);
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(value);
}

void OnnxGraphWriter::intsAttribute(onnx::NodeProto& node, const char* name, const std::vector<std::int64_t>& values)
{
    onnx::AttributeProto& a = *node.add_attribute();
    a.set_name(name);
    a.set_type(onnx::AttributeProto::INTS);
    for (std::int64_t v : values)
        a.add_ints(v);
}

void OnnxGraphWriter::floatAttribute(onnx::NodeProto& node, const char* name, float value)
{
    onnx::AttributeProto& a = *node.add_attribute();
    a.set_name(name);
    a.set_type(onnx::AttributeProto::FLOAT);
    a.set_f(value);
}

} // namespace mantissa::onnx_import
