#pragma once
// Reading ONNX's node tests (Debian's libonnx-testdata): a test's model inputs and the integer
// inputs of its test_data_set_0 after the first (a reshape's target shape, axes), which the
// import fixes as constants so that the graph is static.
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

} // namespace mantissa::onnx_import
