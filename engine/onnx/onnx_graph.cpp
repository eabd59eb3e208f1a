#include "engine/onnx/onnx_graph.h"

#include "engine/util/check.h"

#include <algorithm>

namespace mantissa::onnx_import {

namespace {

std::int64_t product(const std::vector<std::int64_t>& shape)
{
    std::int64_t count = 1;
    for (std::int64_t dim : shape)
        count *= dim;
    return count;
}

template <typename T>
const T* findNamed(const std::vector<T>& items, const std::string& name)
{
    const auto found = std::find_if(items.begin(), items.end(), [&](const T& item) { return item.name == name; });
    return found == items.end() ? nullptr : &*found;
}

} // namespace

const char* elementTypeName(ElementType type)
{
    switch (type) {
    case ElementType::Float32: return "float32";
    case ElementType::UInt8: return "uint8";
    case ElementType::Int8: return "int8";
    case ElementType::UInt16: return "uint16";
    case ElementType::Int16: return "int16";
    case ElementType::Int32: return "int32";
    case ElementType::Int64: return "int64";
    case ElementType::String: return "string";
    case ElementType::Bool: return "bool";
    case ElementType::Float16: return "float16";
    case ElementType::Float64: return "float64";
    case ElementType::UInt32: return "uint32";
    case ElementType::UInt64: return "uint64";
    case ElementType::BFloat16: return "bfloat16";
    case ElementType::Undefined: break;
    }
    return "undefined";
}

bool isFloatingPoint(ElementType type)
{
    return type == ElementType::Float32 || type == ElementType::Float64 || type == ElementType::Float16 ||
           type == ElementType::BFloat16;
}

const char* valueKindName(ValueKind kind)
{
    switch (kind) {
    case ValueKind::Input: return "input";
    case ValueKind::Activation: return "activation";
    case ValueKind::Parameter: return "parameter";
    case ValueKind::Constant: return "constant";
    }
    return "?";
}

std::int64_t OnnxTensor::elementCount() const { return product(shape); }

std::int64_t OnnxValue::elementCount() const { return product(shape); }

const OnnxAttribute* OnnxNode::attribute(const std::string& attributeName) const
{
    return findNamed(attributes, attributeName);
}

std::int64_t OnnxNode::intAttribute(const std::string& attributeName, std::int64_t fallback) const
{
    const OnnxAttribute* found = attribute(attributeName);
    return found && found->kind == OnnxAttribute::Kind::Int ? found->i : fallback;
}

float OnnxNode::floatAttribute(const std::string& attributeName, float fallback) const
{
    const OnnxAttribute* found = attribute(attributeName);
    return found && found->kind == OnnxAttribute::Kind::Float ? found->f : fallback;
}

std::vector<std::int64_t> OnnxNode::intsAttribute(const std::string& attributeName) const
{
    const OnnxAttribute* found = attribute(attributeName);
    return found && found->kind == OnnxAttribute::Kind::Ints ? found->ints : std::vector<std::int64_t>{};
}

std::string OnnxNode::stringAttribute(const std::string& attributeName, const std::string& fallback) const
{
    const OnnxAttribute* found = attribute(attributeName);
    return found && found->kind == OnnxAttribute::Kind::String ? found->s : fallback;
}

const OnnxValue* OnnxGraph::value(const std::string& name) const { return findNamed(values, name); }

const OnnxTensor* OnnxGraph::parameter(const std::string& name) const { return findNamed(parameters, name); }

const OnnxTensor* OnnxGraph::constant(const std::string& name) const { return findNamed(constants, name); }

std::vector<const OnnxNode*> OnnxGraph::unsupportedNodes() const
{
    std::vector<const OnnxNode*> found;
    for (const OnnxNode& node : nodes) {
        if (!node.supported)
            found.push_back(&node);
    }
    return found;
}

std::int64_t OnnxGraph::parameterElementCount() const
{
    std::int64_t count = 0;
    for (const OnnxTensor& tensor : parameters)
        count += tensor.elementCount();
    return count;
}

double OnnxGraph::flopsPerSample() const
{
    double flops = 0;
    for (const OnnxNode& node : nodes)
        flops += node.flopsPerSample;
    return flops;
}

std::vector<float> transpose2d(const std::vector<float>& values, const std::vector<std::int64_t>& dims)
{
    MANTISSA_ASSERT(dims.size() == 2 && static_cast<std::int64_t>(values.size()) == dims[0] * dims[1]);
    const std::int64_t rows = dims[0], columns = dims[1];
    std::vector<float> out(values.size());
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < columns; ++c)
            out[static_cast<std::size_t>(c * rows + r)] = values[static_cast<std::size_t>(r * columns + c)];
    return out;
}

} // namespace mantissa::onnx_import
