#pragma once
// The neutral intermediate representation of an imported ONNX model: what the graph engine
// compiles into its ops. Every shape is static (the import fixed the input shape and folded the
// shape arithmetic), nodes are in topological order, and each initializer is either a trainable
// parameter or a constant. No ONNX or protobuf type appears here, so a consumer needs neither.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mantissa::onnx_import {

// ONNX's element types that a model can carry; the numbers are TensorProto.DataType's.
enum class ElementType : int {
    Undefined = 0,
    Float32 = 1,
    UInt8 = 2,
    Int8 = 3,
    UInt16 = 4,
    Int16 = 5,
    Int32 = 6,
    Int64 = 7,
    String = 8,
    Bool = 9,
    Float16 = 10,
    Float64 = 11,
    UInt32 = 12,
    UInt64 = 13,
    BFloat16 = 16,
};

const char* elementTypeName(ElementType type);

// The values of a row-major [rows, columns] matrix (dims) as its transpose, [columns, rows].
std::vector<float> transpose2d(const std::vector<float>& values, const std::vector<std::int64_t>& dims);
// Float16, BFloat16, Float32 and Float64: the types whose values an OnnxTensor keeps as floats.
bool isFloatingPoint(ElementType type);

// A tensor's data: floating-point types widened or narrowed to float, integer types and Bool
// as int64 (exactly one of the two vectors is filled). String tensors are refused at import.
struct OnnxTensor {
    std::string name;
    ElementType type = ElementType::Undefined;
    std::vector<std::int64_t> shape;
    std::vector<float> floats;
    std::vector<std::int64_t> ints;

    std::int64_t elementCount() const;
};

enum class ValueKind {
    Input,      // a graph input fed with data (images, tokens, labels)
    Activation, // computed by a node
    Parameter,  // a trainable initializer
    Constant,   // a non-trainable initializer or a value the import folded
};

const char* valueKindName(ValueKind kind);

struct OnnxValue {
    std::string name;
    ElementType type = ElementType::Undefined;
    // Static dimensions. shapeKnown is false only downstream of an unsupported node whose
    // output shape ONNX could not infer; a graph without unsupported nodes has every shape.
    std::vector<std::int64_t> shape;
    bool shapeKnown = true;
    ValueKind kind = ValueKind::Activation;

    std::int64_t elementCount() const;
};

struct OnnxAttribute {
    enum class Kind { Int, Float, String, Ints, Floats, Strings, Tensor };
    std::string name;
    Kind kind = Kind::Int;
    std::int64_t i = 0;
    float f = 0;
    std::string s;
    std::vector<std::int64_t> ints;
    std::vector<float> floats;
    std::vector<std::string> strings;
    std::optional<OnnxTensor> tensor;
};

struct OnnxNode {
    std::string opType;
    std::string domain; // empty for the default ONNX domain
    std::string name;   // the node's name in the file, or "<op>_<index>" when it has none
    // Value names; an empty name is an optional input left out.
    std::vector<std::string> inputs;
    std::vector<std::string> outputs;
    std::vector<OnnxAttribute> attributes;
    bool supported = false;
    // Multiply-adds times two per sample for Gemm, MatMul, Conv and ConvTranspose; 0 otherwise.
    double flopsPerSample = 0;

    const OnnxAttribute* attribute(const std::string& attributeName) const;
    std::int64_t intAttribute(const std::string& attributeName, std::int64_t fallback) const;
    float floatAttribute(const std::string& attributeName, float fallback) const;
    std::vector<std::int64_t> intsAttribute(const std::string& attributeName) const;
    std::string stringAttribute(const std::string& attributeName, const std::string& fallback) const;
};

struct OnnxGraph {
    std::string path;                 // the file it came from
    std::int64_t opsetVersion = 0;    // of the default domain
    std::string producer;             // producer_name and version, e.g. "pytorch 1.13.1"
    std::int64_t batchSize = 1;       // the first dimension of the first input, as fixed at import
    std::vector<std::string> inputs;  // graph inputs fed with data, in the file's order
    std::vector<std::string> outputs; // graph outputs, in the file's order
    std::vector<OnnxNode> nodes;      // topological order
    std::vector<OnnxTensor> parameters;
    std::vector<OnnxTensor> constants;
    std::vector<OnnxValue> values; // every value that an input, output or node names
    // The node computing an in-graph SoftmaxCrossEntropyLoss, when the model carries its loss.
    std::optional<std::size_t> lossNode;

    const OnnxValue* value(const std::string& name) const;
    const OnnxTensor* parameter(const std::string& name) const;
    const OnnxTensor* constant(const std::string& name) const;
    std::vector<const OnnxNode*> unsupportedNodes() const;
    std::int64_t parameterElementCount() const;
    double flopsPerSample() const;
};

} // namespace mantissa::onnx_import
