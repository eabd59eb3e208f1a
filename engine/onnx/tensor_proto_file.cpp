#include "engine/onnx/tensor_proto_file.h"

#include "engine/onnx/onnx_import_error.h"
#include "engine/onnx/proto_tensor.h"

#include <fstream>
#include <sstream>

namespace mantissa::onnx_import {

OnnxTensor readTensorProtoFile(const std::string& path)
{
    std::ifstream file(path, std::ios::binary);
    if (!file)
        throw OnnxImportError(path + ": cannot be opened");
    std::ostringstream bytes;
    bytes << file.rdbuf();
    onnx::TensorProto proto;
    if (!proto.ParseFromString(bytes.str()))
        throw OnnxImportError(path + ": not a serialised ONNX TensorProto (protobuf could not parse it)");
    return tensorFromProto(proto, path);
}

} // namespace mantissa::onnx_import
