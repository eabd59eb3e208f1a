#include "engine/onnx/node_patterns.h"

#include <cmath>

namespace mantissa::onnx_import {

NodePatterns::NodePatterns(const OnnxGraph& onnx) : m_onnx(onnx)
{
    for (std::size_t i = 0; i < onnx.nodes.size(); ++i) {
        for (const std::string& output : onnx.nodes[i].outputs)
            m_producer[output] = i;
        for (const std::string& input : onnx.nodes[i].inputs)
            ++m_readers[input];
    }
    for (const std::string& output : onnx.outputs)
        ++m_readers[output];
}

std::optional<std::size_t> NodePatterns::soleProducer(const std::string& value, const char* type) const
{
    const auto found = m_producer.find(value);
    if (found == m_producer.end())
        return std::nullopt;
    const OnnxNode& node = m_onnx.nodes[found->second];
    if (node.opType != type || !node.domain.empty() || m_readers.at(value) != 1)
        return std::nullopt;
    return found->second;
}

std::optional<std::pair<std::string, float>> NodePatterns::besideScalar(const OnnxNode& node) const
{
    if (node.inputs.size() != 2 || node.outputs.size() != 1)
        return std::nullopt;
    for (std::size_t side = 0; side < 2; ++side) {
        const OnnxTensor* constant = m_onnx.constant(node.inputs[side]);
        if (constant && constant->floats.size() == 1 && !m_onnx.constant(node.inputs[1 - side]))
            return std::pair{node.inputs[1 - side], constant->floats[0]};
    }
    return std::nullopt;
}

std::optional<std::string> NodePatterns::besideConstant(const OnnxNode& node, float value, float tolerance,
                                                        bool eitherSide) const
{
    if (node.inputs.size() != 2 || node.outputs.size() != 1)
        return std::nullopt;
    for (std::size_t side = eitherSide ? 0 : 1; side < 2; ++side) {
        const OnnxTensor* constant = m_onnx.constant(node.inputs[side]);
        if (constant && constant->floats.size() == 1 && std::fabs(constant->floats[0] - value) <= tolerance &&
            !m_onnx.constant(node.inputs[1 - side]))
            return node.inputs[1 - side];
    }
    return std::nullopt;
}

} // namespace mantissa::onnx_import
