#pragma once
// Reading ONNX's node tests (Debian's libonnx-testdata): a test's model inputs and the integer
// inputs of its test_data_set_0 after the first (a reshape's target shape, axes), which the
// import fixes as constants so that the graph is static; and a test's model rewritten so that
// one input is the data and the others initializers, as an exported model has them.
#include "engine/onnx/onnx_graph.h"
#include "engine/onnx/tensor_proto_file.h"

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace mantissa::onnx_import {

inline std::vector<std::string> nodeTestInputNames(const std::filesystem::path& model)
{
    std::ifstream file(model, std::ios::binary);
    onnx::ModelProto proto;
    if (!proto.ParseFromIstream(&file))
        return {};
    std::vector<std::string> names;
    for (const auto& input : proto.graph().input())
        names.push_back(input.name());
    return names;
}

inline std::vector<OnnxTensor> nodeTestIntegerInputs(const std::filesystem::path& folder)
{
    std::vector<OnnxTensor> fixed;
    const std::vector<std::string> names = nodeTestInputNames(folder / "model.onnx");
    for (std::size_t k = 1; k < names.size(); ++k) {
        const std::filesystem::path file = folder / "test_data_set_0" / ("input_" + std::to_string(k) + ".pb");
        if (!std::filesystem::exists(file))
            break;
        OnnxTensor value = readTensorProtoFile(file.string());
        value.name = names[k];
        if (value.type == ElementType::Int64 || value.type == ElementType::Int32)
            fixed.push_back(std::move(value));
    }
    return fixed;
}

// The op types of a node test's model, in its order.
inline std::vector<std::string> nodeTestOpTypes(const std::filesystem::path& model)
{
    std::ifstream file(model, std::ios::binary);
    onnx::ModelProto proto;
    std::vector<std::string> types;
    if (proto.ParseFromIstream(&file))
        for (const auto& node : proto.graph().node())
            types.push_back(node.op_type());
    return types;
}

// The test_data_set_0 value of each input of a node test, in the model's order.
inline std::vector<onnx::TensorProto> nodeTestInputProtos(const std::filesystem::path& folder)
{
    std::vector<onnx::TensorProto> values;
    for (std::size_t k = 0;; ++k) {
        std::ifstream file(folder / "test_data_set_0" / ("input_" + std::to_string(k) + ".pb"), std::ios::binary);
        onnx::TensorProto value;
        if (!file || !value.ParseFromIstream(&file))
            return values;
        values.push_back(std::move(value));
    }
}

// The input a forward run feeds as the data: the first holding floats (a Where's x after its
// condition), else the first.
inline std::size_t nodeTestDataInput(const std::vector<onnx::TensorProto>& inputs)
{
    for (std::size_t k = 0; k < inputs.size(); ++k) {
        const int type = inputs[k].data_type();
        if (type == onnx::TensorProto::FLOAT || type == onnx::TensorProto::DOUBLE ||
            type == onnx::TensorProto::FLOAT16 || type == onnx::TensorProto::BFLOAT16)
            return k;
    }
    return 0;
}

// A node test's model with input `data` as its one graph input and every other input an
// initializer holding test_data_set_0's value: a weight input (Conv's W, a batch norm's scale)
// is then a trainable parameter, as an exported model's weights are, and a mask, a shape or an
// axis a constant. Only the first output is kept (a training-mode batch norm's running statistics
// are the layer's buffers, not outputs of the engine's graph). With `asOneSample` the data input
// and the output take a leading axis of 1: the test's whole data is one sample, which the other
// inputs broadcast against as numpy's rules say (a test of broadcasting arithmetic, whose first
// axis is no batch, and whose other operands would otherwise span it). Written to `out`; false
// where the model does not parse or its inputs have no values.
inline bool writeNodeTestModel(const std::filesystem::path& folder, std::size_t data, const std::filesystem::path& out,
                               bool asOneSample = false)
{
    std::ifstream file(folder / "model.onnx", std::ios::binary);
    onnx::ModelProto model;
    if (!model.ParseFromIstream(&file))
        return false;
    std::vector<onnx::TensorProto> values = nodeTestInputProtos(folder);
    onnx::GraphProto& graph = *model.mutable_graph();
    if (values.size() < static_cast<std::size_t>(graph.input_size()) || data >= values.size())
        return false;
    // The inputs stay listed, as IR versions before 4 want an initializer's to be; one with an
    // initializer is no data input.
    for (int k = 0; k < graph.input_size(); ++k) {
        if (static_cast<std::size_t>(k) == data)
            continue;
        onnx::TensorProto& initializer = values[static_cast<std::size_t>(k)];
        initializer.set_name(graph.input(k).name());
        *graph.add_initializer() = std::move(initializer);
    }
    while (graph.output_size() > 1)
        graph.mutable_output()->RemoveLast();
    if (asOneSample) {
        for (onnx::ValueInfoProto* value : {graph.mutable_input(static_cast<int>(data)), graph.mutable_output(0)}) {
            if (!value->type().tensor_type().has_shape())
                continue;
            onnx::TensorShapeProto& shape = *value->mutable_type()->mutable_tensor_type()->mutable_shape();
            onnx::TensorShapeProto batched;
            batched.add_dim()->set_dim_value(1);
            for (const auto& dim : shape.dim())
                *batched.add_dim() = dim;
            shape = std::move(batched);
        }
    }
    std::ofstream written(out, std::ios::binary);
    return model.SerializeToOstream(&written);
}

} // namespace mantissa::onnx_import
