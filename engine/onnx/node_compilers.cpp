#include "engine/onnx/node_compilers.h"

namespace mantissa::onnx_import {

namespace {

const NodeCompilerTable& table()
{
    static const NodeCompilerTable compilers = [] {
        NodeCompilerTable t;
        addBasicNodeCompilers(t);
        addTensorNodeCompilers(t);
        addConvNodeCompilers(t);
        addConvTransposeNodeCompiler(t);
        return t;
    }();
    return compilers;
}

} // namespace

NodeCompiler findNodeCompiler(const std::string& opType)
{
    const auto found = table().find(opType);
    return found == table().end() ? nullptr : found->second;
}

std::vector<std::string> compiledOpTypes()
{
    std::vector<std::string> types;
    for (const auto& [type, compiler] : table())
        types.push_back(type);
    return types;
}

} // namespace mantissa::onnx_import
