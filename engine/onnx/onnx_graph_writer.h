#pragma once
// Appends nodes, initializers and constants to an ONNX graph that an exporter is writing
// (export_layer_list.h): each node is named after the engine layer it stands for and writes
// "<name>.out", parameters become initializers of their own names with their fp32 values, and
// fixed values (a reshape's target, attention's scale and mask) are Constant nodes, which the
// import reads as constants, never as trainable parameters.
#include "engine/backend/backend.h"
#include "engine/model/parameter.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace mantissa::onnx_import {

class OnnxGraphWriter {
public:
    OnnxGraphWriter(onnx::GraphProto& graph, Backend& backend) : m_graph(graph), m_backend(backend) {}

    onnx::NodeProto& addNode(const std::string& op, const std::string& name, const std::vector<std::string>& inputs);
    // The parameter's master values as an initializer named as the parameter; returns the name.
    std::string initializer(const Parameter& p) { return initializer(p.name, p.master); }
    std::string initializer(const std::string& name, const Tensor& t);
    // A Constant node holding `values` of `dims`; returns the value it writes.
    std::string floatConstant(const std::string& name, const std::vector<std::int64_t>& dims,
                              const std::vector<float>& values);
    std::string intConstant(const std::string& name, const std::vector<std::int64_t>& values);
    // A float initializer that is not a parameter (a dropout's ratio).
    std::string scalarInitializer(const std::string& name, float value);

    static void intAttribute(onnx::NodeProto& node, const char* name, std::int64_t value);
    static void intsAttribute(onnx::NodeProto& node, const char* name, const std::vector<std::int64_t>& values);
    static void floatAttribute(onnx::NodeProto& node, const char* name, float value);

private:
    onnx::GraphProto& m_graph;
    Backend& m_backend;
};

} // namespace mantissa::onnx_import
