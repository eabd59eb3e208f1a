#include "engine/onnx/proto_tensor.h"

#include "engine/onnx/onnx_import_error.h"

#include <bit>
#include <cstring>

namespace mantissa::onnx_import {

namespace {

float halfToFloat(std::uint16_t bits)
{
    const std::uint32_t sign = std::uint32_t(bits >> 15) << 31;
    const std::uint32_t exponent = (bits >> 10) & 0x1f;
    std::uint32_t mantissa = bits & 0x3ff;
    if (exponent == 0x1f)
        return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
    if (exponent != 0)
        return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
    // Subnormal: value = mantissa * 2^-24.
    const float magnitude = float(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
}

float bfloat16ToFloat(std::uint16_t bits) { return std::bit_cast<float>(std::uint32_t(bits) << 16); }

std::size_t rawElementSize(ElementType type)
{
    switch (type) {
    case ElementType::Bool:
    case ElementType::Int8:
    case ElementType::UInt8: return 1;
    case ElementType::Int16:
    case ElementType::UInt16:
    case ElementType::Float16:
    case ElementType::BFloat16: return 2;
    case ElementType::Int32:
    case ElementType::UInt32:
    case ElementType::Float32: return 4;
    case ElementType::Int64:
    case ElementType::UInt64:
    case ElementType::Float64: return 8;
    default: return 0;
    }
}

template <typename T>
T readRaw(const std::string& raw, std::size_t index)
{
    T value;
    std::memcpy(&value, raw.data() + index * sizeof(T), sizeof(T)); // little-endian, as ONNX stores it
    return value;
}

void fromRawData(const std::string& raw, OnnxTensor& tensor, std::size_t count)
{
    for (std::size_t i = 0; i < count; ++i) {
        switch (tensor.type) {
        case ElementType::Float32: tensor.floats.push_back(readRaw<float>(raw, i)); break;
        case ElementType::Float64: tensor.floats.push_back(float(readRaw<double>(raw, i))); break;
        case ElementType::Float16: tensor.floats.push_back(halfToFloat(readRaw<std::uint16_t>(raw, i))); break;
        case ElementType::BFloat16: tensor.floats.push_back(bfloat16ToFloat(readRaw<std::uint16_t>(raw, i))); break;
        case ElementType::Bool:
        case ElementType::UInt8: tensor.ints.push_back(readRaw<std::uint8_t>(raw, i)); break;
        case ElementType::Int8: tensor.ints.push_back(readRaw<std::int8_t>(raw, i)); break;
        case ElementType::Int16: tensor.ints.push_back(readRaw<std::int16_t>(raw, i)); break;
        case ElementType::UInt16: tensor.ints.push_back(readRaw<std::uint16_t>(raw, i)); break;
        case ElementType::Int32: tensor.ints.push_back(readRaw<std::int32_t>(raw, i)); break;
        case ElementType::UInt32: tensor.ints.push_back(readRaw<std::uint32_t>(raw, i)); break;
        case ElementType::Int64: tensor.ints.push_back(readRaw<std::int64_t>(raw, i)); break;
        case ElementType::UInt64: tensor.ints.push_back(std::int64_t(readRaw<std::uint64_t>(raw, i))); break;
        default: break;
        }
    }
}

void fromTypedFields(const onnx::TensorProto& proto, OnnxTensor& tensor)
{
    switch (tensor.type) {
    case ElementType::Float32: tensor.floats.assign(proto.float_data().begin(), proto.float_data().end()); break;
    case ElementType::Float64:
        for (double value : proto.double_data())
            tensor.floats.push_back(float(value));
        break;
    case ElementType::Float16: // the 16 bits of each value in an int32
        for (std::int32_t bits : proto.int32_data())
            tensor.floats.push_back(halfToFloat(std::uint16_t(bits)));
        break;
    case ElementType::BFloat16:
        for (std::int32_t bits : proto.int32_data())
            tensor.floats.push_back(bfloat16ToFloat(std::uint16_t(bits)));
        break;
    case ElementType::Int64: tensor.ints.assign(proto.int64_data().begin(), proto.int64_data().end()); break;
    case ElementType::UInt32:
    case ElementType::UInt64:
        for (std::uint64_t value : proto.uint64_data())
            tensor.ints.push_back(std::int64_t(value));
        break;
    default: tensor.ints.assign(proto.int32_data().begin(), proto.int32_data().end()); break;
    }
}

} // namespace

OnnxTensor tensorFromProto(const onnx::TensorProto& proto, const std::string& where)
{
    OnnxTensor tensor;
    tensor.name = proto.name();
    tensor.type = ElementType(proto.data_type());
    tensor.shape.assign(proto.dims().begin(), proto.dims().end());
    if (tensor.type == ElementType::String)
        throw OnnxImportError(where + ": string tensors are not supported");
    const std::size_t elementSize = rawElementSize(tensor.type);
    if (elementSize == 0)
        throw OnnxImportError(where + ": element type " + std::to_string(proto.data_type()) + " is not supported");
    if (proto.data_location() == onnx::TensorProto::EXTERNAL)
        throw OnnxImportError(where + ": its data was not loaded from its external file");
    std::int64_t expected = 1;
    for (std::int64_t dim : tensor.shape) {
        if (dim < 0)
            throw OnnxImportError(where + ": negative dimension " + std::to_string(dim));
        if (__builtin_mul_overflow(expected, dim, &expected))
            throw OnnxImportError(where + ": its dimensions multiply beyond 2^63 values");
    }
    if (proto.has_raw_data()) {
        if (proto.raw_data().size() != std::size_t(expected) * elementSize)
            throw OnnxImportError(where + ": " + std::to_string(proto.raw_data().size()) + " bytes of data for " +
                                  std::to_string(expected) + " values of " + elementTypeName(tensor.type));
        fromRawData(proto.raw_data(), tensor, std::size_t(expected));
    } else {
        fromTypedFields(proto, tensor);
    }
    const std::size_t held = isFloatingPoint(tensor.type) ? tensor.floats.size() : tensor.ints.size();
    if (held != std::size_t(expected))
        throw OnnxImportError(where + ": holds " + std::to_string(held) + " values, its dimensions say " +
                              std::to_string(expected));
    return tensor;
}

bool canWriteToProto(ElementType type)
{
    return type != ElementType::Float16 && type != ElementType::BFloat16 && type != ElementType::String &&
           rawElementSize(type) != 0;
}

onnx::TensorProto tensorToProto(const OnnxTensor& tensor)
{
    onnx::TensorProto proto;
    proto.set_name(tensor.name);
    proto.set_data_type(int(tensor.type));
    for (std::int64_t dim : tensor.shape)
        proto.add_dims(dim);
    switch (tensor.type) {
    case ElementType::Float32:
        for (float value : tensor.floats)
            proto.add_float_data(value);
        break;
    case ElementType::Float64:
        for (float value : tensor.floats)
            proto.add_double_data(value);
        break;
    case ElementType::Int64:
        for (std::int64_t value : tensor.ints)
            proto.add_int64_data(value);
        break;
    case ElementType::UInt32:
    case ElementType::UInt64:
        for (std::int64_t value : tensor.ints)
            proto.add_uint64_data(std::uint64_t(value));
        break;
    default:
        for (std::int64_t value : tensor.ints)
            proto.add_int32_data(std::int32_t(value));
        break;
    }
    return proto;
}

} // namespace mantissa::onnx_import
